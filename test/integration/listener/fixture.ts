import { Writable } from 'node:stream';
import type { KubeConfig, V1Role, V1RoleBinding } from '@kubernetes/client-node';
import type { ListenerConfig } from '@aro/api';
import {
  EphemeralRunner,
  EphemeralRunnerKind,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
  ListenerDefaults,
} from '@aro/api';
import { MultiClient } from '@aro/actions';
import { createLogger } from '@aro/observability';
import { KubeClient, RoleBindingKind, RoleKind, isNotFound } from '@aro/kube';
import { DEFAULT_PAT, RunningSimulator, startSimulator } from '../../../apps/simulator/src';
import type { TimingOptions } from '../../../apps/simulator/src';
import { startListenerApp, StartedListener } from '../../../apps/listener/src/bootstrap';
import { validateListenerConfig } from '../../../apps/listener/src/config';
import type { ListenerTuning } from '../../../apps/listener/src/tuning';
import { createTestNamespace, kubeConfigForUser, testKubeConfig, waitFor } from '../../harness';
import { createScaleSet, testLogger } from '../ephemeral-runner/fixture';

/** Short timings: a long poll of 1 s makes every cycle quick; backoffs of a fraction of a second. */
export const FAST_TUNING: Partial<ListenerTuning> = {
  requestTimeoutMs: 10_000,
  longPollTimeoutMs: 15_000,
  maxRetries: 2,
  backoff: {
    conflict: { initialMs: 200, maxMs: 1_000 },
    unauthorized: { initialMs: 200, maxMs: 1_000 },
    rateLimited: { initialMs: 200, maxMs: 1_000 },
    transient: { initialMs: 100, maxMs: 1_000 },
  },
  shutdownTimeoutMs: 10_000,
};

export async function startListenerTestSimulator(
  timing: Partial<TimingOptions> = {},
): Promise<RunningSimulator> {
  return startSimulator({
    seed: {
      timing: {
        longPollTimeoutMs: 1_000,
        autoStartJobs: true,
        sessionIdleTimeoutMs: 120_000,
        // Long enough that a job the listener failed to acquire is not rescued by a re-offer in a test.
        jobReofferMs: 600_000,
        ...timing,
      },
    },
  });
}

/**
 * The Role the AutoscalingListener controller gives a listener (upstream's rulesForListenerRole): patch
 * its EphemeralRunnerSet by name, patch EphemeralRunners and their status. Nothing to read: the tests
 * run the listener as this user, so any get/list/watch it tried would fail.
 */
export async function listenerKubeConfig(namespace: string, ersName: string): Promise<KubeConfig> {
  const admin = new KubeClient(testKubeConfig());
  const user = `listener-${namespace}`;
  await admin.create<V1Role>(RoleKind, {
    metadata: { name: 'listener', namespace },
    rules: [
      {
        apiGroups: ['actions.github.com'],
        resources: ['ephemeralrunnersets'],
        resourceNames: [ersName],
        verbs: ['patch'],
      },
      { apiGroups: ['actions.github.com'], resources: ['ephemeralrunners'], verbs: ['patch'] },
      { apiGroups: ['actions.github.com'], resources: ['ephemeralrunners/status'], verbs: ['patch'] },
    ],
  });
  await admin.create<V1RoleBinding>(RoleBindingKind, {
    metadata: { name: 'listener', namespace },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'listener' },
    subjects: [{ kind: 'User', name: user, apiGroup: 'rbac.authorization.k8s.io' }],
  });
  admin.close();
  return kubeConfigForUser(user);
}

export interface ListenerFixture {
  sim: RunningSimulator;
  namespace: string;
  kube: KubeClient;
  scaleSetId: number;
  ersName: string;
  /** A client configuration with exactly the listener's Role in the namespace. */
  listenerKubeConfig: KubeConfig;
  /** The config.json the listener runs with (as the AutoscalingListener controller would write it). */
  config: ListenerConfig;
  /** Starts the listener in-process as the listener's Role allows; `logs` collects its log lines. */
  start(tuning?: Partial<ListenerTuning>, owner?: string, logs?: string[]): Promise<StartedListener>;
  ers(): Promise<EphemeralRunnerSet>;
  /** Registers a runner on the simulator and creates its EphemeralRunner (as the controllers would). */
  createRunner(name: string): Promise<EphemeralRunner>;
  runner(name: string): Promise<EphemeralRunner | undefined>;
  /** Waits until the EphemeralRunnerSet's spec satisfies `check`. */
  waitForSpec(
    check: (spec: EphemeralRunnerSet['spec']) => boolean,
    description: string,
    timeoutMs?: number,
  ): Promise<EphemeralRunnerSet>;
  stopAll(): Promise<void>;
}

let counter = 0;

/**
 * A namespace holding an EphemeralRunnerSet made directly in the apiserver (no controller), a scale set
 * on the simulator, and a listener config pointing at both.
 */
export async function listenerFixture(
  sim: RunningSimulator,
  opts: { minRunners?: number; maxRunners?: number; prefix?: string } = {},
): Promise<ListenerFixture> {
  const namespace = await createTestNamespace(opts.prefix ?? 'listener');
  const kube = new KubeClient(testKubeConfig());
  const ersName = 'arc-set';
  const scaleSetName = `listener-${process.pid}-${Date.now()}-${++counter}`;
  const scaleSetId = await createScaleSet(sim, scaleSetName);
  await kube.create<EphemeralRunnerSet>(EphemeralRunnerSetKind, {
    metadata: { name: ersName, namespace },
    spec: {
      replicas: 0,
      patchID: 0,
      ephemeralRunnerSpec: {
        githubConfigUrl: sim.configUrl({ org: 'octo' }),
        githubConfigSecret: 'gh',
        runnerScaleSetId: scaleSetId,
        spec: { containers: [{ name: 'runner', image: 'runner' }] },
      },
    },
  });
  const config: ListenerConfig = {
    configure_url: sim.configUrl({ org: 'octo' }),
    github_token: DEFAULT_PAT,
    ephemeral_runner_set_namespace: namespace,
    ephemeral_runner_set_name: ersName,
    min_runners: opts.minRunners ?? 0,
    max_runners: opts.maxRunners ?? 10,
    runner_scale_set_id: scaleSetId,
    runner_scale_set_name: scaleSetName,
    metrics_addr: '127.0.0.1:0',
    metrics_endpoint: ListenerDefaults.metricsEndpoint,
  };
  const listenerKc = await listenerKubeConfig(namespace, ersName);
  const started: StartedListener[] = [];

  const fixture: ListenerFixture = {
    sim,
    namespace,
    kube,
    scaleSetId,
    ersName,
    listenerKubeConfig: listenerKc,
    config,
    async start(tuning = {}, owner = `listener-pod-${counter}`, logs) {
      const logger = logs
        ? createLogger({
            level: 'debug',
            destination: new Writable({
              write(chunk: Buffer, _enc, done) {
                logs.push(chunk.toString('utf8'));
                done();
              },
            }),
          })
        : testLogger();
      const s = await startListenerApp({
        config: validateListenerConfig(config),
        logger: logger.child({ owner }),
        kubeConfig: listenerKc,
        tuning: { ...FAST_TUNING, ...tuning },
        owner,
      });
      started.push(s);
      return s;
    },
    ers: () => kube.get<EphemeralRunnerSet>(EphemeralRunnerSetKind, namespace, ersName),
    async createRunner(name) {
      await registerRunner(sim, scaleSetId, name);
      return kube.create<EphemeralRunner>(EphemeralRunnerKind, {
        metadata: { name, namespace },
        spec: {
          githubConfigUrl: sim.configUrl({ org: 'octo' }),
          githubConfigSecret: 'gh',
          runnerScaleSetId: scaleSetId,
          spec: { containers: [{ name: 'runner', image: 'runner' }] },
        },
      });
    },
    async runner(name) {
      try {
        return await kube.get<EphemeralRunner>(EphemeralRunnerKind, namespace, name);
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
    waitForSpec(check, description, timeoutMs = 30_000) {
      return waitFor(
        async () => {
          const ers = await fixture.ers();
          return check(ers.spec) ? ers : undefined;
        },
        { description, timeoutMs },
      );
    },
    async stopAll() {
      for (const s of started.splice(0)) await s.close();
      kube.close();
    },
  };
  return fixture;
}

/** A runner registration on the simulator, made with the scale-set API as the controller makes it. */
export async function registerRunner(
  sim: RunningSimulator,
  scaleSetId: number,
  name: string,
): Promise<number> {
  const client = new MultiClient({ retry: { maxRetries: 0 } }).getClientFor({
    configUrl: sim.configUrl({ org: 'octo' }),
    namespace: 'runners',
    credentials: { kind: 'pat', token: DEFAULT_PAT },
  });
  const jit = await client.generateJitRunnerConfig({ name, workFolder: '_work' }, scaleSetId);
  await client.close();
  return jit.runner.id;
}

/** The value of one series in a Prometheus text exposition, or undefined. */
export function metricValue(text: string, series: string): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const sp = line.lastIndexOf(' ');
    if (sp > 0 && line.slice(0, sp) === series) return Number(line.slice(sp + 1));
  }
  return undefined;
}

export async function scrape(
  started: StartedListener,
  path = '/metrics',
): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://127.0.0.1:${started.port}${path}`);
  return { status: res.status, body: await res.text() };
}
