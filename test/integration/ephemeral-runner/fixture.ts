import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { KubeConfig, V1Pod, V1Secret } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { EphemeralRunner, EphemeralRunnerKind, EphemeralRunnerSpec, ResourceKind } from '@aro/api';
import { ActionsServiceClient, MultiClient } from '@aro/actions';
import {
  EphemeralRunnerReconciler,
  EphemeralRunnerController,
  OrphanRegistrationSweep,
  ScaleSetLedger,
  UnregistrationQueue,
  type EvictionWebhookModuleOptions,
} from '@aro/controllers';
import {
  InformerCache,
  KubeApiError,
  KubeClient,
  KubeObject,
  Manager,
  PodKind,
  SecretKind,
  isNotFound,
} from '@aro/kube';
import { createLogger, Logger } from '@aro/observability';
import { DEFAULT_PAT, RunningSimulator, startSimulator } from '../../../apps/simulator/src';
import { loadControllerConfig } from '../../../apps/controller/src/config';
import {
  ControllerAppModule,
  ControllerAppOptions,
} from '../../../apps/controller/src/controller-app.module';
import type { ExtensionModule } from '../../../apps/controller/src/extensions';
import { createTestNamespace, testKubeConfig, waitFor } from '../../harness';
import { simulatorSuite, type SimulatorSuite } from '../simulator-suite';

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

/** The controller's parts, as the app's module graph made them. */
export interface FixtureController {
  reconciler: EphemeralRunnerReconciler;
  unregistrations: UnregistrationQueue;
  sweep: OrphanRegistrationSweep;
  ledger: ScaleSetLedger;
}

/** Test timings and limits, in the units of the modules (ms); what the environment cannot say. */
export interface FixtureControllerConfig {
  maxConcurrentReconciles?: number;
  unregistrationWorkers?: number;
  terminatedPodGracePeriodSeconds?: number;
  maxFailures?: number;
  failureBackoffBaseMs?: number;
  orphanSweepIntervalMs?: number;
  orphanGraceMs?: number;
  orphanMaxRemovalsPerPass?: number;
  /** Where the scale set ledger lives; the fixture's default is the test namespace. */
  ledgerNamespace?: string;
  /** The namespace the sweep checks runners in (the informer stays on the test's); '' for all. */
  namespace?: string;
  unregistrationDrainTimeoutMs?: number;
  unregistrationJobStillRunningRetryMs?: number;
  events?: 'all' | 'failures' | 'none';
  /** RUNNER_START_TIMEOUT, in ms (the app's default otherwise). */
  startTimeoutMs?: number;
  /** BUSY_RUNNER_EVICTION_PROTECTION (the app's default otherwise). */
  evictionProtection?: boolean;
  /**
   * Serve the eviction webhook on loopback (off otherwise): on `port` (default a free one), with the
   * pair `tls`, or with the certificate the controller makes and keeps as `certificate` says.
   */
  evictionWebhook?: {
    port?: number;
    tls?: { cert: string; key: string };
    certificate?: EvictionWebhookModuleOptions['certificate'];
    busyAnswerStandsMs?: number;
  };
}

export interface ControllerFixture {
  namespace: string;
  sim: RunningSimulator;
  /** The test's own client, admin, used to act as the user, the listener and the kubelet. */
  kube: KubeClient;
  scaleSetId: number;
  configUrl: string;
  /** The app's metrics registry. */
  registry: Registry;
  manager: Manager;
  controller: FixtureController;
  /** The booted app, to get any of its providers. */
  app: INestApplicationContext;
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
  config?: FixtureControllerConfig;
  /** Extension modules to boot the app with, as ARO_EXTENSIONS would add them. */
  extensions?: ExtensionModule[];
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

/** Makes the app's client fail merge patches as an overloaded apiserver would when `fails` says so. */
function failMergePatches(client: KubeClient, fails: (name: string, patch: object) => boolean): void {
  const mergePatch = client.mergePatch.bind(client);
  client.mergePatch = async <T extends KubeObject>(
    kind: ResourceKind,
    namespace: string,
    name: string,
    patch: object,
  ): Promise<T> => {
    if (fails(name, patch)) {
      throw new KubeApiError(
        500,
        { verb: 'patch', kind, namespace, name },
        { kind: 'Status', code: 500, reason: 'InternalError', message: 'injected by the test' },
      );
    }
    return mergePatch<T>(kind, namespace, name, patch);
  };
}

/** Makes the app's cache miss the pods `hidden` names, as a cache that has not caught up would. */
function hidePods(cache: InformerCache, hidden: (name: string) => boolean): void {
  const get = cache.get.bind(cache);
  cache.get = async <T extends KubeObject>(
    kind: ResourceKind,
    namespace: string,
    name: string,
  ): Promise<T> => {
    if (kind === PodKind && hidden(name)) {
      throw new KubeApiError(
        404,
        { verb: 'get', kind, namespace, name },
        { kind: 'Status', code: 404, reason: 'NotFound', message: `pods "${name}" not found` },
      );
    }
    return get<T>(kind, namespace, name);
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
 * The controller app's own module graph (ControllerAppModule, as main.ts boots it, without the HTTP
 * server), scoped to `namespace`, without leader election, with the test's kubeconfig, clock and
 * short timings. Starts the manager unless `start` is false.
 */
export async function bootControllerModules(
  namespace: string,
  opts: Pick<FixtureOptions, 'config' | 'extensions' | 'withoutApiReader' | 'now' | 'kubeConfig'> & {
    logger: Logger;
    start?: boolean;
  },
): Promise<INestApplicationContext> {
  const c = opts.config ?? {};
  const options: ControllerAppOptions = {
    config: loadControllerConfig({
      WATCH_NAMESPACE: namespace,
      LEADER_ELECTION: 'false',
      SHUTDOWN_TIMEOUT_SECONDS: '5',
    }),
    logger: opts.logger,
    kubeConfig: opts.kubeConfig ?? testKubeConfig(),
    extensions: opts.extensions,
    now: opts.now,
    managerStart: 'manual',
    overrides: {
      ephemeralRunner: {
        userAgent: USER_AGENT,
        maxConcurrentReconciles: c.maxConcurrentReconciles ?? 2,
        failureBackoffBaseMs: c.failureBackoffBaseMs ?? 50,
        terminatedPodGracePeriodSeconds: c.terminatedPodGracePeriodSeconds,
        maxFailures: c.maxFailures,
        events: c.events,
        startTimeoutMs: c.startTimeoutMs,
        evictionProtection: c.evictionProtection,
        uncachedReads: !opts.withoutApiReader,
      },
      unregistration: {
        workers: c.unregistrationWorkers,
        // Tests that exercise the sweep set their own grace; others must not see it remove anything.
        orphanGraceMs: c.orphanGraceMs ?? 60 * 60_000,
        orphanSweepIntervalMs: c.orphanSweepIntervalMs ?? 60 * 60_000,
        drainTimeoutMs: c.unregistrationDrainTimeoutMs ?? 2_000,
        jobStillRunningRetryMs: c.unregistrationJobStillRunningRetryMs ?? 200,
        orphanMaxRemovalsPerPass: c.orphanMaxRemovalsPerPass,
        ledgerNamespace: c.ledgerNamespace,
        namespace: c.namespace,
      },
      actions: { retry: { maxRetries: 1, minWaitMs: 10, maxWaitMs: 50 } },
      ...(c.evictionWebhook
        ? {
            evictionWebhook: {
              enabled: true,
              port: c.evictionWebhook.port ?? 0,
              bindAddress: '127.0.0.1',
              tls: c.evictionWebhook.tls,
              certificate: c.evictionWebhook.certificate,
              busyAnswerStandsMs: c.evictionWebhook.busyAnswerStandsMs,
            },
          }
        : {}),
    },
  };
  // Undefined overrides must not erase what the environment gave.
  for (const part of Object.values(options.overrides ?? {})) {
    for (const [k, v] of Object.entries(part as Record<string, unknown>)) {
      if (v === undefined) delete (part as Record<string, unknown>)[k];
    }
  }
  const app = await NestFactory.createApplicationContext(ControllerAppModule.forRoot(options), {
    logger: false,
    abortOnError: false,
  });
  if (opts.start ?? true) await app.get(Manager).start();
  return app;
}

/**
 * A namespace with the GitHub config secret, a scale set on the simulator, and the controller app's
 * module graph scoped to the namespace, with short test timings.
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

  const app = await bootControllerModules(namespace, {
    ...opts,
    // The scale set ledger beside the runners: a restarted fixture on the namespace finds it.
    config: { ledgerNamespace: namespace, ...opts.config },
    kubeConfig,
    logger,
    start: false,
  });
  const manager = app.get(Manager);
  if (opts.faults?.failMergePatch) failMergePatches(app.get(KubeClient), opts.faults.failMergePatch);
  if (opts.faults?.hidePod) hidePods(app.get(InformerCache), opts.faults.hidePod);
  const runnerController = app.get(EphemeralRunnerController);
  const controller: FixtureController = {
    reconciler: runnerController.reconciler!,
    unregistrations: app.get(UnregistrationQueue),
    sweep: app.get(OrphanRegistrationSweep),
    ledger: app.get(ScaleSetLedger),
  };
  if (opts.start ?? true) await manager.start();

  const read = async <T>(fn: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await fn();
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  };
  let stopped: Promise<void> | undefined;
  const fixture: ControllerFixture = {
    namespace,
    sim,
    kube,
    scaleSetId,
    configUrl,
    registry: app.get(Registry),
    manager,
    controller,
    app,
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
    stop: () => (stopped ??= app.close()),
  };
  return fixture;
}

export interface ControllerSuite extends SimulatorSuite<ControllerFixture, FixtureOptions> {
  /** An Actions client with the simulator's PAT, to arrange registrations as another party would. */
  actions(): ActionsServiceClient;
}

/** One simulator for a describe block, and a controller per test that is stopped after it. */
export function controllerSuite(): ControllerSuite {
  const suite = simulatorSuite(startTestSimulator, startControllerFixture);
  return {
    get sim() {
      return suite.sim;
    },
    start: (opts) => suite.start(opts),
    actions() {
      return new MultiClient({ retry: { maxRetries: 0 } }).getClientFor({
        configUrl: suite.sim.configUrl({ org: 'octo' }),
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
