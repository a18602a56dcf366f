import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { KubeConfig, V1Pod, V1Secret } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import {
  API_VERSION,
  AutoscalingRunnerSet,
  EphemeralRunner,
  EphemeralRunnerKind,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
  EphemeralRunnerSpec,
  ResourceKind,
} from '@aro/api';
import { ActionsServiceClient, MultiClient } from '@aro/actions';
import type {
  AutoscalingListenerModuleOptions,
  AutoscalingRunnerSetModuleOptions,
  EphemeralRunnerSetModuleOptions,
} from '@aro/controllers';
import { KubeClient, KubeObject, Manager, PodKind, SecretKind, isNotFound } from '@aro/kube';
import { createLogger, Logger } from '@aro/observability';
import { DEFAULT_PAT, RunningSimulator, startSimulator } from '../../../apps/simulator/src';
import { loadControllerConfig } from '../../../apps/controller/src/config';
import {
  ControllerAppModule,
  ControllerAppOptions,
} from '../../../apps/controller/src/controller-app.module';
import { createTestNamespace, testKubeConfig } from '../../harness';
import { scaled } from '../../harness/time-scale';
import { simulatorSuite, type SimulatorSuite } from '../simulator-suite';

export const GITHUB_SECRET = 'github-config-secret';
export const USER_AGENT = 'aro-test/0.0.0';
export const LISTENER_IMAGE = 'ghcr.io/example/aro:test';

export function testLogger(): Logger {
  const level = process.env.ARO_TEST_LOG as 'debug' | 'info' | undefined;
  return createLogger({ level: level ?? 'silent', format: 'text', destination: process.stderr });
}

export interface ScaleSetFixtureOptions {
  /** Module options over the environment's, for short timings (the app's own graph runs all of them). */
  runnerSet?: Partial<EphemeralRunnerSetModuleOptions>;
  runnerScaleSet?: Partial<AutoscalingRunnerSetModuleOptions>;
  listener?: Partial<AutoscalingListenerModuleOptions>;
  /** The orphan sweep's timings over the fixture's (which keep it from removing anything on its own). */
  unregistration?: { orphanGraceMs?: number };
  /** Environment variables over the fixture's (e.g. CONTROLLER_MANAGER_CONTAINER_IMAGE: ''). */
  env?: Record<string, string>;
  /** The app's logger instead of the silent one (a test that reads what the controller logs). */
  logger?: Logger;
  /** Skip creating the GitHub config secret. */
  skipSecret?: boolean;
  /**
   * Run on an earlier fixture's namespaces instead of new ones (a controller restart: what the first
   * app left is what the second one finds). The GitHub config secret is not created again.
   */
  namespacesOf?: Pick<ScaleSetFixture, 'namespace' | 'controllerNamespace'>;
  /**
   * The identity the app runs as (a user the test grants rights by RBAC); the control plane's admin
   * when absent. The fixture's own client (`kube`, `read`, `list`) stays the admin.
   */
  controllerKubeConfig?: KubeConfig;
}

export interface ScaleSetFixture {
  namespace: string;
  /** Where the listeners live (the controller's namespace). */
  controllerNamespace: string;
  sim: RunningSimulator;
  kube: KubeClient;
  /** The app's one metrics registry: what it serves on /metrics. */
  registry: Registry;
  manager: Manager;
  /** The booted app graph, to get any of its providers. */
  app: INestApplicationContext;
  configUrl: string;
  read<T extends KubeObject>(kind: ResourceKind, name: string, namespace?: string): Promise<T | undefined>;
  list<T extends KubeObject>(kind: ResourceKind, namespace?: string): Promise<T[]>;
  runners(setName?: string): Promise<EphemeralRunner[]>;
  runnerSet(name: string): Promise<EphemeralRunnerSet | undefined>;
  /** Patches `{spec:{replicas, patchID}}` as the listener does. */
  scale(setName: string, replicas: number, patchID: number): Promise<void>;
  /** Patches job fields on a runner's status as the listener does on JobStarted. */
  reportJobStarted(runnerName: string, jobId: string): Promise<void>;
  stop(): Promise<void>;
}

let setCounter = 0;

export async function createScaleSetOnService(sim: RunningSimulator, name: string): Promise<number> {
  const set = await serviceClient(sim).createRunnerScaleSet({ name, runnerGroupId: 1 });
  return set.id;
}

export function serviceClient(sim: RunningSimulator): ActionsServiceClient {
  return new MultiClient({ retry: { maxRetries: 0 } }).getClientFor({
    configUrl: sim.configUrl({ org: 'octo' }),
    namespace: 'test',
    credentials: { kind: 'pat', token: DEFAULT_PAT },
  });
}

export function uniqueName(prefix: string): string {
  return `${prefix}-${process.pid}-${Date.now() % 100000}-${++setCounter}`;
}

export function runnerPodTemplate(): EphemeralRunnerSpec['spec'] {
  return {
    restartPolicy: 'Never',
    containers: [
      { name: 'runner', image: 'ghcr.io/actions/actions-runner:latest', command: ['/home/runner/run.sh'] },
    ],
  };
}

/**
 * An AutoscalingRunnerSet on the fixture's namespace, simulator and GitHub secret, 0..`maxRunners`;
 * `spec` adds or replaces fields (a vault, a scale-set name).
 */
export function autoscalingRunnerSet(
  fixture: Pick<ScaleSetFixture, 'namespace' | 'configUrl'>,
  name: string,
  maxRunners = 5,
  spec: Partial<AutoscalingRunnerSet['spec']> = {},
): AutoscalingRunnerSet {
  return {
    apiVersion: 'actions.github.com/v1alpha1',
    kind: 'AutoscalingRunnerSet',
    metadata: { name, namespace: fixture.namespace },
    spec: {
      githubConfigUrl: fixture.configUrl,
      githubConfigSecret: GITHUB_SECRET,
      maxRunners,
      minRunners: 0,
      template: { spec: runnerPodTemplate() },
      ...spec,
    },
  };
}

/** Drops undefined values, so an override left unset does not erase what the environment gave. */
function defined<T extends object>(part: T): T {
  return Object.fromEntries(Object.entries(part).filter(([, v]) => v !== undefined)) as T;
}

/**
 * A namespace with the GitHub config secret, and the controller app's own module graph (as main.ts
 * boots it, without the HTTP server) watching that namespace only, with a controller namespace of
 * its own (POD_NAMESPACE) for the listeners, against the shared control plane and the suite's
 * simulator. Only the kubeconfig and short timings are the test's.
 */
export async function startScaleSetFixture(
  sim: RunningSimulator,
  opts: ScaleSetFixtureOptions = {},
): Promise<ScaleSetFixture> {
  const namespace = opts.namespacesOf?.namespace ?? (await createTestNamespace('ss'));
  const controllerNamespace = opts.namespacesOf?.controllerNamespace ?? (await createTestNamespace('ctl'));
  const kubeConfig = testKubeConfig();
  const kube = new KubeClient(kubeConfig);
  const testName = expect.getState().currentTestName;
  const logger = (opts.logger ?? testLogger()).child({ test: testName ?? 'setup' });
  if (!opts.skipSecret && !opts.namespacesOf) {
    await kube.create<V1Secret>(SecretKind, {
      metadata: { name: GITHUB_SECRET, namespace },
      stringData: { github_token: DEFAULT_PAT },
    });
  }
  const options: ControllerAppOptions = {
    config: loadControllerConfig({
      WATCH_NAMESPACE: namespace,
      POD_NAMESPACE: controllerNamespace,
      LEADER_ELECTION: 'false',
      SHUTDOWN_TIMEOUT_SECONDS: '5',
      CONTROLLER_MANAGER_CONTAINER_IMAGE: LISTENER_IMAGE,
      ...opts.env,
    }),
    logger,
    kubeConfig: opts.controllerKubeConfig ?? kubeConfig,
    managerStart: 'manual',
    overrides: {
      ephemeralRunner: {
        userAgent: USER_AGENT,
        maxConcurrentReconciles: 4,
        failureBackoffBaseMs: 50,
      },
      unregistration: {
        orphanGraceMs: 60 * 60_000,
        orphanSweepIntervalMs: 60 * 60_000,
        drainTimeoutMs: 2_000,
        jobStillRunningRetryMs: 200,
        ...opts.unregistration,
      },
      actions: { retry: { maxRetries: 1, minWaitMs: 10, maxWaitMs: 50 } },
      ephemeralRunnerSet: defined({
        failedRunnerBackoffBaseMs: 100,
        failedRunnerBackoffMaxMs: 1_000,
        deletionPollMs: 200,
        // The product's 3 s, at the run's time scale: a test's own "listener" answers a JobCompleted
        // within it on a loaded machine too (cost.test.ts's burst).
        endedRunnerHoldMs: scaled(3_000),
        ...opts.runnerSet,
      }),
      autoscalingRunnerSet: defined({
        errorBackoffBaseMs: 200,
        errorBackoffMaxMs: 2_000,
        deletionPollMs: 200,
        drainPollMs: 200,
        ...opts.runnerScaleSet,
      }),
      autoscalingListener: defined({
        restartBackoffBaseMs: 200,
        deletionPollMs: 200,
        ...opts.listener,
      }),
    },
  };
  const app = await NestFactory.createApplicationContext(ControllerAppModule.forRoot(options), {
    logger: false,
    abortOnError: false,
  });
  const manager = app.get(Manager);
  const registry = app.get<Registry>(Registry);
  await manager.start();
  let closed: Promise<void> | undefined;

  const read = async <T extends KubeObject>(kind: ResourceKind, name: string, ns = namespace) => {
    try {
      return await kube.get<T>(kind, ns, name);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  };
  return {
    namespace,
    controllerNamespace,
    sim,
    kube,
    registry,
    manager,
    app,
    configUrl: sim.configUrl({ org: 'octo' }),
    read,
    list: <T extends KubeObject>(kind: ResourceKind, ns = namespace) => kube.list<T>(kind, { namespace: ns }),
    async runners(setName) {
      const all = await kube.list<EphemeralRunner>(EphemeralRunnerKind, { namespace });
      return setName === undefined
        ? all
        : all.filter((r) => r.metadata?.ownerReferences?.some((o) => o.name === setName));
    },
    runnerSet: (name) => read<EphemeralRunnerSet>(EphemeralRunnerSetKind, name),
    async scale(setName, replicas, patchID) {
      await kube.mergePatch(EphemeralRunnerSetKind, namespace, setName, { spec: { replicas, patchID } });
    },
    async reportJobStarted(runnerName, jobId) {
      await kube.mergePatchStatus(EphemeralRunnerKind, namespace, runnerName, {
        status: { jobId, jobRequestId: 1, jobRepositoryName: 'octo/hello', jobDisplayName: 'build' },
      });
    },
    // Idempotent: a test may stop its app early (a controller restart), and the suite stops it again.
    stop: () => (closed ??= app.close()),
  };
}

/** An EphemeralRunnerSet as the AutoscalingRunnerSet controller creates it: no replicas, patch 0. */
export async function createRunnerSet(
  fixture: ScaleSetFixture,
  name: string,
  scaleSetId: number,
  change?: (set: EphemeralRunnerSet) => void,
): Promise<EphemeralRunnerSet> {
  const set: EphemeralRunnerSet = {
    apiVersion: API_VERSION,
    kind: 'EphemeralRunnerSet',
    metadata: {
      name,
      namespace: fixture.namespace,
      labels: {
        'app.kubernetes.io/component': 'runner-set',
        'actions.github.com/scale-set-name': name,
        'actions.github.com/scale-set-namespace': fixture.namespace,
      },
    },
    spec: {
      replicas: 0,
      patchID: 0,
      ephemeralRunnerSpec: {
        githubConfigUrl: fixture.configUrl,
        githubConfigSecret: GITHUB_SECRET,
        runnerScaleSetId: scaleSetId,
        spec: runnerPodTemplate(),
      },
    },
  };
  change?.(set);
  return fixture.kube.create<EphemeralRunnerSet>(EphemeralRunnerSetKind, set);
}

export type ScaleSetSuite = SimulatorSuite<ScaleSetFixture, ScaleSetFixtureOptions>;

/** One simulator per describe block, a controller app per test, stopped after it. */
export function scaleSetSuite(): ScaleSetSuite {
  return simulatorSuite(
    () => startSimulator({ seed: { timing: { autoStartJobs: false } } }),
    startScaleSetFixture,
  );
}

/** Waits until `check` holds for the runners of a set, returning them. */
export async function waitForRunners(
  fixture: ScaleSetFixture,
  setName: string,
  check: (runners: EphemeralRunner[]) => boolean,
  description: string,
  timeoutMs = 60_000,
): Promise<EphemeralRunner[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const last = await fixture.runners(setName);
    if (check(last)) return last;
    if (Date.now() > deadline) {
      const seen = last
        .map(
          (r) =>
            `${r.metadata?.name}[${r.status?.phase ?? '-'}${r.metadata?.deletionTimestamp ? ',deleting' : ''}]`,
        )
        .join(' ');
      throw new Error(
        `Timed out after ${timeoutMs} ms waiting for ${description}; runners of ${fixture.namespace}/${setName}: ${seen || 'none'}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export const live = (runners: EphemeralRunner[]): EphemeralRunner[] =>
  runners.filter((r) => !r.metadata?.deletionTimestamp);

export async function runnerPod(fixture: ScaleSetFixture, runnerName: string): Promise<V1Pod | undefined> {
  return fixture.read<V1Pod>(PodKind, runnerName);
}
