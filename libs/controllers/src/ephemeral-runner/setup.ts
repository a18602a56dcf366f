import type { Registry } from 'prom-client';
import { EphemeralRunnerKind } from '@aro/api';
import {
  ControllerBuilder,
  KubeClient,
  Manager,
  PodKind,
  Reader,
  resourceVersionChangedPredicate,
} from '@aro/kube';
import type { Logger } from '@aro/observability';
import { metricsRegistry } from '@aro/observability';
import { EventRecorder } from '../events/event-recorder';
import { EphemeralRunnerReconciler } from './ephemeral-runner.reconciler';
import type { RunnerLifecycleObserver, RunnerPodMutator } from './extensions';
import { OrphanRegistrationSweep } from './orphan-sweep';
import { ScaleSetLedger, rememberingScaleSets } from './scale-set-ledger';
import { EphemeralRunnerPhaseMetrics } from './phase-metrics';
import { ephemeralRunnerPredicate, ownedPodPredicate } from './predicates';
import { ActionsClientProvider, UnregistrationQueue } from './unregistration-queue';

export interface EphemeralRunnerControllerConfig {
  /** Put in the runner's User-Agent, e.g. `aro/0.1.0`. */
  userAgent: string;
  /** Namespace to manage; undefined or '' for all. */
  namespace?: string;
  maxConcurrentReconciles?: number;
  unregistrationWorkers?: number;
  terminatedPodGracePeriodSeconds?: number;
  maxFailures?: number;
  failureBackoffBaseMs?: number;
  orphanSweepIntervalMs?: number;
  orphanGraceMs?: number;
  /** Orphaned registrations one sweep pass queues for removal at most (50). */
  orphanMaxRemovalsPerPass?: number;
  /**
   * The controller's own namespace, where the ConfigMap `aro-runner-scale-sets` remembers the scale
   * sets it registered runners on (the orphan sweep's durable memory). Defaults to POD_NAMESPACE,
   * then the watched namespace, then `default`. The controller needs get, create and patch on
   * ConfigMaps there.
   */
  ledgerNamespace?: string;
  /** How long a shutdown gives queued registration removals. */
  unregistrationDrainTimeoutMs?: number;
  /** Retry of a removal the service refused because the runner is executing a job. */
  unregistrationJobStillRunningRetryMs?: number;
  events?: 'all' | 'failures' | 'none';
}

export interface EphemeralRunnerControllerParts {
  manager: Manager;
  client: KubeClient;
  /** The manager's informer cache. */
  cache: Reader;
  /**
   * Uncached reads, where the cache is not safe evidence. Defaults to the client, as the seed defaults
   * it to the manager's API reader: without one every deletion of a registered runner would fail.
   */
  apiReader?: Reader;
  /** The clock, for tests of the time-based branches. */
  now?: () => number;
  actions: ActionsClientProvider;
  logger: Logger;
  registry?: Registry;
  podMutators?: RunnerPodMutator[];
  observers?: RunnerLifecycleObserver[];
}

export interface EphemeralRunnerController {
  reconciler: EphemeralRunnerReconciler;
  unregistrations: UnregistrationQueue;
  sweep: OrphanRegistrationSweep;
  ledger: ScaleSetLedger;
}

/**
 * Registers the EphemeralRunner controller with a manager: the reconciler watching EphemeralRunners
 * and their pods, the unregistration workers and the orphan sweep. All three run only on the leader.
 */
export function setupEphemeralRunnerController(
  parts: EphemeralRunnerControllerParts,
  config: EphemeralRunnerControllerConfig,
): EphemeralRunnerController {
  const registry = parts.registry ?? metricsRegistry();
  const logger = parts.logger;
  const unregistrations = new UnregistrationQueue({
    actions: parts.actions,
    logger: logger.child({ component: 'runner-unregistration' }),
    workers: config.unregistrationWorkers,
    drainTimeoutMs: config.unregistrationDrainTimeoutMs,
    jobStillRunningRetryMs: config.unregistrationJobStillRunningRetryMs,
    registry,
  });
  const ledger = new ScaleSetLedger({
    client: parts.client,
    // The Downward API's POD_NAMESPACE is the controller's own namespace, where its Role is.
    namespace: config.ledgerNamespace || process.env.POD_NAMESPACE || config.namespace || 'default',
    logger: logger.child({ component: 'scale-set-ledger' }),
  });
  const sweep = new OrphanRegistrationSweep({
    reader: parts.apiReader ?? parts.client,
    actions: parts.actions,
    queue: unregistrations,
    ledger,
    logger: logger.child({ component: 'orphan-registration-sweep' }),
    namespace: config.namespace || undefined,
    intervalMs: config.orphanSweepIntervalMs,
    graceMs: config.orphanGraceMs,
    maxRemovalsPerPass: config.orphanMaxRemovalsPerPass,
    registry,
  });
  const eventsMode = config.events ?? 'all';
  const recorder =
    eventsMode === 'none'
      ? undefined
      : new EventRecorder(parts.client, 'aro-controller', logger.child({ component: 'events' }), eventsMode);
  const reconciler = new EphemeralRunnerReconciler(
    {
      client: parts.client,
      cache: parts.cache,
      apiReader: parts.apiReader ?? parts.client,
      // Every registration starts by asking for a client: the scale set is remembered before it.
      actions: rememberingScaleSets(parts.actions, ledger),
      unregistrations,
      phaseMetrics: new EphemeralRunnerPhaseMetrics(logger, registry),
      events: recorder,
      podMutators: parts.podMutators,
      observers: parts.observers,
      logger,
      now: parts.now,
    },
    {
      userAgent: config.userAgent,
      terminatedPodGracePeriodSeconds: config.terminatedPodGracePeriodSeconds,
      maxFailures: config.maxFailures,
      failureBackoffBaseMs: config.failureBackoffBaseMs,
    },
  );

  new ControllerBuilder(parts.manager, 'ephemeralrunner')
    .for(EphemeralRunnerKind, ephemeralRunnerPredicate())
    .owns(PodKind, ownedPodPredicate())
    .withEventFilter(resourceVersionChangedPredicate)
    .withOptions({ maxConcurrentReconciles: config.maxConcurrentReconciles ?? 2 })
    .complete(reconciler);
  parts.manager.add(unregistrations);
  parts.manager.add(sweep);
  return { reconciler, unregistrations, sweep, ledger };
}
