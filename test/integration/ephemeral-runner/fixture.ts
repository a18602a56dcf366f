import type { KubeConfig, V1Pod, V1Secret } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { EphemeralRunner, EphemeralRunnerKind, EphemeralRunnerSpec, ResourceKind } from '@aro/api';
import { ActionsServiceClient, MultiClient } from '@aro/actions';
import {
  EphemeralRunnerController,
  EphemeralRunnerControllerConfig,
  RunnerLifecycleObserver,
  RunnerPodMutator,
  actionsClientsFrom,
  setupEphemeralRunnerController,
} from '@aro/controllers';
import {
  InformerCache,
  KubeApiError,
  KubeClient,
  KubeObject,
  Manager,
  PodKind,
  Reader,
  SecretKind,
  isNotFound,
} from '@aro/kube';
import { createLogger, Logger } from '@aro/observability';
import { SecretResolver } from '@aro/secrets';
import { DEFAULT_PAT, RunningSimulator, startSimulator } from '../../../apps/simulator/src';
import { createTestNamespace, testKubeConfig, waitFor } from '../../harness';

export const GITHUB_SECRET = 'github-config-secret';
export const USER_AGENT = 'aro-test/0.0.0';

/** Test logs are silent unless ARO_TEST_LOG=debug|info is set, to keep jest's output readable. */
export function testLogger(): Logger {
  const level = process.env.ARO_TEST_LOG as 'debug' | 'info' | undefined;
  return createLogger({ level: level ?? 'silent', format: 'text', destination: process.stderr });
}

/** One simulator per test file: scale sets are per test, so tests do not see each other's runners. */
export async function startTestSimulator(): Promise<RunningSimulator> {
  return startSimulator({ seed: { timing: { autoStartJobs: false } } });
}

export interface ControllerFixture {
  namespace: string;
  sim: RunningSimulator;
  /** The test's own client, admin, used to act as the user, the listener and the kubelet. */
  kube: KubeClient;
  scaleSetId: number;
  configUrl: string;
  registry: Registry;
  manager: Manager;
  controller: EphemeralRunnerController;
  /** Creates an EphemeralRunner (the runner container named `runner`) as a runner set would. */
  createRunner(name: string, change?: (spec: EphemeralRunnerSpec) => void): Promise<EphemeralRunner>;
  runner(name: string): Promise<EphemeralRunner | undefined>;
  pod(name: string): Promise<V1Pod | undefined>;
  secret(name: string): Promise<V1Secret | undefined>;
  /** Waits for the runner to satisfy `check` (undefined = deleted), with a message naming what it waited for. */
  waitForRunner(
    name: string,
    check: (r: EphemeralRunner | undefined) => boolean,
    description: string,
    timeoutMs?: number,
  ): Promise<EphemeralRunner | undefined>;
  waitForPod(
    name: string,
    check: (p: V1Pod | undefined) => boolean,
    description: string,
  ): Promise<V1Pod | undefined>;
  /** Stops the controller; what it leaves behind stays for the test to inspect. */
  stop(): Promise<void>;
}

export interface FixtureOptions {
  config?: Partial<EphemeralRunnerControllerConfig>;
  podMutators?: RunnerPodMutator[];
  observers?: RunnerLifecycleObserver[];
  /** Another scale set's id to use instead of creating one. */
  scaleSetId?: number;
  /** Leave the manager unstarted (the test starts it). */
  start?: boolean;
  /** Run without an uncached reader, as a misconfigured controller would. */
  withoutApiReader?: boolean;
  now?: () => number;
  namespace?: string;
  /** The namespace already holds the GitHub config secret (a second controller on the same namespace). */
  skipSecret?: boolean;
  /** Another control plane than the shared one (the namespace must then be given and exist). */
  kubeConfig?: KubeConfig;
  /**
   * Faults between the reconciler and the API server: `failMergePatch` makes a merge patch fail (with
   * a 500 the reconciler must retry) when it returns true; `hidePod` makes the cache miss a pod.
   */
  faults?: {
    failMergePatch?: (name: string, patch: object) => boolean;
    hidePod?: (name: string) => boolean;
  };
}

let scaleSetCounter = 0;

/** The client, with merge patches that fail as an overloaded apiserver would when `fails` says so. */
function withFailingMergePatch(
  client: KubeClient,
  fails: (name: string, patch: object) => boolean,
): KubeClient {
  return new Proxy(client, {
    get(target, prop, receiver) {
      if (prop === 'mergePatch') {
        return async (kind: ResourceKind, namespace: string, name: string, patch: object) => {
          if (fails(name, patch)) {
            throw new KubeApiError(
              500,
              { verb: 'patch', kind, namespace, name },
              { kind: 'Status', code: 500, reason: 'InternalError', message: 'injected by the test' },
            );
          }
          return target.mergePatch(kind, namespace, name, patch);
        };
      }
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** The cache, missing the pods `hidden` names, as a cache that has not caught up would. */
function withHiddenPods(cache: Reader, hidden: (name: string) => boolean): Reader {
  return {
    get: async <T extends KubeObject>(kind: ResourceKind, namespace: string, name: string): Promise<T> => {
      if (kind === PodKind && hidden(name)) {
        throw new KubeApiError(
          404,
          { verb: 'get', kind, namespace, name },
          { kind: 'Status', code: 404, reason: 'NotFound', message: `pods "${name}" not found` },
        );
      }
      return cache.get<T>(kind, namespace, name);
    },
    list: (kind, opts) => cache.list(kind, opts),
  };
}

export async function createScaleSet(sim: RunningSimulator, name: string): Promise<number> {
  const client = new MultiClient({ retry: { maxRetries: 0 } }).getClientFor({
    configUrl: sim.configUrl({ org: 'octo' }),
    namespace: 'setup',
    credentials: { kind: 'pat', token: DEFAULT_PAT },
  });
  const set = await client.createRunnerScaleSet({ name, runnerGroupId: 1 });
  return set.id;
}

/**
 * A namespace with the GitHub config secret, a scale set on the simulator, and a controller manager
 * scoped to the namespace running the EphemeralRunner controller with short test timings.
 */
export async function startControllerFixture(
  sim: RunningSimulator,
  opts: FixtureOptions = {},
): Promise<ControllerFixture> {
  const namespace = opts.namespace ?? (await createTestNamespace('er'));
  const kubeConfig = opts.kubeConfig ?? testKubeConfig();
  const kube = new KubeClient(kubeConfig);
  // Outside jest (the benchmarks) there is no current test to name.
  const testName = typeof expect === 'undefined' ? undefined : expect.getState().currentTestName;
  const logger = testLogger().child({ test: testName ?? 'setup' });
  if (!opts.skipSecret) {
    await kube.create<V1Secret>(SecretKind, {
      metadata: { name: GITHUB_SECRET, namespace },
      stringData: { github_token: DEFAULT_PAT },
    });
  }
  const scaleSetId =
    opts.scaleSetId ?? (await createScaleSet(sim, `set-${process.pid}-${Date.now()}-${++scaleSetCounter}`));
  const configUrl = sim.configUrl({ org: 'octo' });

  const registry = new Registry();
  const controllerClient = new KubeClient(kubeConfig, { userAgent: 'aro-controller-under-test' });
  const cache = new InformerCache(controllerClient, { namespace, logger, registry });
  const manager = new Manager({
    client: controllerClient,
    cache,
    logger,
    registry,
    leaderElection: false,
    gracefulShutdownTimeoutMs: 5_000,
  });
  const multiClient = new MultiClient({
    logger,
    registry,
    retry: { maxRetries: 1, minWaitMs: 10, maxWaitMs: 50 },
  });
  const resolver = new SecretResolver({ kube: controllerClient, multiClient, logger });
  const faults = opts.faults;
  const reconcilerClient = faults?.failMergePatch
    ? withFailingMergePatch(controllerClient, faults.failMergePatch)
    : controllerClient;
  const reconcilerCache: Reader = faults?.hidePod ? withHiddenPods(cache, faults.hidePod) : cache;
  const controller = setupEphemeralRunnerController(
    {
      manager,
      client: reconcilerClient,
      cache: reconcilerCache,
      apiReader: opts.withoutApiReader ? undefined : controllerClient,
      now: opts.now,
      actions: actionsClientsFrom(resolver),
      logger,
      registry,
      podMutators: opts.podMutators,
      observers: opts.observers,
    },
    {
      userAgent: USER_AGENT,
      namespace,
      maxConcurrentReconciles: 2,
      failureBackoffBaseMs: 50,
      // Tests that exercise the sweep set their own grace; others must not see it remove anything.
      orphanGraceMs: 60 * 60_000,
      orphanSweepIntervalMs: 60 * 60_000,
      unregistrationDrainTimeoutMs: 2_000,
      unregistrationJobStillRunningRetryMs: 200,
      // The scale set ledger beside the runners: a restarted fixture on the namespace finds it.
      ledgerNamespace: namespace,
      ...opts.config,
    },
  );
  if (opts.start ?? true) await manager.start();

  const read = async <T>(fn: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await fn();
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  };
  const fixture: ControllerFixture = {
    namespace,
    sim,
    kube,
    scaleSetId,
    configUrl,
    registry,
    manager,
    controller,
    async createRunner(name, change) {
      const spec: EphemeralRunnerSpec = {
        githubConfigUrl: configUrl,
        githubConfigSecret: GITHUB_SECRET,
        runnerScaleSetId: scaleSetId,
        spec: {
          restartPolicy: 'Never',
          containers: [
            {
              name: 'runner',
              image: 'ghcr.io/actions/actions-runner:latest',
              command: ['/home/runner/run.sh'],
            },
          ],
        },
      };
      change?.(spec);
      return kube.create<EphemeralRunner>(EphemeralRunnerKind, {
        apiVersion: 'actions.github.com/v1alpha1',
        kind: 'EphemeralRunner',
        metadata: {
          name,
          namespace,
          labels: {
            'actions.github.com/scale-set-name': 'set',
            'actions.github.com/scale-set-namespace': namespace,
          },
        },
        spec,
      });
    },
    runner: (name) => read(() => kube.get<EphemeralRunner>(EphemeralRunnerKind, namespace, name)),
    pod: (name) => read(() => kube.get<V1Pod>(PodKind, namespace, name)),
    secret: (name) => read(() => kube.get<V1Secret>(SecretKind, namespace, name)),
    async waitForRunner(name, check, description, timeoutMs = 30_000) {
      let last: EphemeralRunner | undefined;
      await waitFor(
        async () => {
          last = await fixture.runner(name);
          return check(last);
        },
        { timeoutMs, intervalMs: 50, description: `${description} (runner ${namespace}/${name})` },
      );
      return last;
    },
    async waitForPod(name, check, description) {
      let last: V1Pod | undefined;
      await waitFor(
        async () => {
          last = await fixture.pod(name);
          return check(last);
        },
        { timeoutMs: 30_000, intervalMs: 50, description: `${description} (pod ${namespace}/${name})` },
      );
      return last;
    },
    stop: () => manager.stop(),
  };
  return fixture;
}

export interface ControllerSuite {
  /** The suite's simulator, started before the first test. */
  readonly sim: RunningSimulator;
  /** A controller fixture on the suite's simulator, stopped after the test. */
  start(opts?: FixtureOptions): Promise<ControllerFixture>;
  /** An Actions client with the simulator's PAT, to arrange registrations as another party would. */
  actions(): ActionsServiceClient;
}

/** One simulator for a describe block, and a controller per test that is stopped after it. */
export function controllerSuite(): ControllerSuite {
  let sim: RunningSimulator | undefined;
  const started: ControllerFixture[] = [];
  beforeAll(async () => {
    sim = await startTestSimulator();
  });
  afterEach(async () => {
    for (const fixture of started.splice(0)) await fixture.stop();
  });
  afterAll(async () => {
    await sim?.stop();
  });
  const current = (): RunningSimulator => {
    if (!sim) throw new Error('the suite simulator is used before beforeAll ran');
    return sim;
  };
  return {
    get sim() {
      return current();
    },
    async start(opts) {
      const fixture = await startControllerFixture(current(), opts);
      started.push(fixture);
      return fixture;
    },
    actions() {
      return new MultiClient({ retry: { maxRetries: 0 } }).getClientFor({
        configUrl: current().configUrl({ org: 'octo' }),
        namespace: 'test',
        credentials: { kind: 'pat', token: DEFAULT_PAT },
      });
    },
  };
}

async function metricSum(registry: Registry, name: string): Promise<number> {
  const values = (await registry.getSingleMetric(name)?.get())?.values ?? [];
  return values
    .filter((v) => v.labels.controller === undefined || v.labels.controller === 'ephemeralrunner')
    .filter((v) => v.labels.name === undefined || v.labels.name === 'ephemeralrunner')
    .reduce((sum, v) => sum + v.value, 0);
}

/**
 * The reconciles the fixture's controller finished, and how many failed, from its own metrics
 * registry: one controller per test and namespace, so these count only the test's runners.
 */
export async function reconcileCounts(f: ControllerFixture): Promise<{ total: number; errors: number }> {
  return {
    total: await metricSum(f.registry, 'controller_runtime_reconcile_total'),
    errors: await metricSum(f.registry, 'controller_runtime_reconcile_errors_total'),
  };
}

async function idle(f: ControllerFixture): Promise<boolean> {
  return (
    (await metricSum(f.registry, 'controller_runtime_active_workers')) === 0 &&
    (await metricSum(f.registry, 'workqueue_depth')) === 0
  );
}

/** Waits until nothing is being reconciled or queued, and returns the reconcile count then. */
export async function idleReconcileCount(f: ControllerFixture): Promise<number> {
  await waitFor(() => idle(f), { description: 'the controller idle (no reconcile running or queued)' });
  return (await reconcileCounts(f)).total;
}

/**
 * Evidence that the controller looked at what the test changed: taken idle before the change
 * (`since`, from idleReconcileCount), it has reconciled since and is idle again, so whatever the
 * test asserts next is what the controller decided, not what it has not got to yet.
 */
export async function waitForReconcileSince(
  f: ControllerFixture,
  since: number,
  description: string,
): Promise<void> {
  await waitFor(async () => (await reconcileCounts(f)).total > since && (await idle(f)), {
    description: `a reconcile after ${description}, and the controller idle again`,
  });
}
