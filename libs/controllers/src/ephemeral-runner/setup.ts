import { EphemeralRunnerKind } from '@aro/api';
import { PodKind } from '@aro/kube';
import { metricsRegistry } from '@aro/observability';
import {
  type ControllerParts,
  type EventsMode,
  completeController,
  eventRecorderFor,
} from '../shared/controller-parts';
import { EphemeralRunnerReconciler } from './ephemeral-runner.reconciler';
import type { RunnerLifecycleObserver, RunnerPodMutator } from './extensions';
import { EphemeralRunnerPhaseMetrics } from './phase-metrics';
import { ephemeralRunnerPredicate, ownedPodPredicate } from './predicates';
import { type ScaleSetLedger, rememberingScaleSets } from '../registrations/scale-set-ledger';
import type { ActionsClientProvider, UnregistrationQueue } from '../registrations/unregistration-queue';

export interface EphemeralRunnerControllerConfig {
  /** Put in the runner's User-Agent, e.g. `aro/0.1.0`. */
  userAgent: string;
  maxConcurrentReconciles?: number;
  terminatedPodGracePeriodSeconds?: number;
  maxFailures?: number;
  failureBackoffBaseMs?: number;
  /** RUNNER_START_TIMEOUT: a runner pod not Running by then fails its runner. */
  startTimeoutMs?: number;
  /** BUSY_RUNNER_EVICTION_PROTECTION: busy runners' pods refuse voluntary eviction. */
  evictionProtection?: boolean;
  events?: EventsMode;
}

/** The common parts but the secret resolver (registrations go through `actions`), and the runner's own. */
export interface EphemeralRunnerControllerParts extends Omit<ControllerParts, 'resolver'> {
  actions: ActionsClientProvider;
  /** Where registrations to remove go (UnregistrationModule's queue in the app). */
  unregistrations: Pick<UnregistrationQueue, 'push'>;
  /**
   * Where the scale sets this controller registers runners on are remembered, before the first
   * registration on each (UnregistrationModule's ledger in the app, which the orphan sweep reads).
   */
  ledger?: ScaleSetLedger;
  podMutators?: RunnerPodMutator[];
  observers?: RunnerLifecycleObserver[];
}

/**
 * Registers the EphemeralRunner controller with a manager: the reconciler watching EphemeralRunners
 * and their pods, leader-only. The registration removals it hands off run in the queue it is given
 * (see UnregistrationModule). Call before the manager starts.
 */
export function setupEphemeralRunnerController(
  parts: EphemeralRunnerControllerParts,
  config: EphemeralRunnerControllerConfig,
): EphemeralRunnerReconciler {
  const registry = parts.registry ?? metricsRegistry();
  const logger = parts.logger;
  const reconciler = new EphemeralRunnerReconciler(
    {
      client: parts.client,
      cache: parts.cache,
      // As upstream's reconciler defaults it to the manager's API reader: without one every deletion of a registered
      // runner would fail.
      apiReader: parts.apiReader ?? parts.client,
      // Every registration starts by asking for a client: the scale set is remembered before it.
      actions: parts.ledger ? rememberingScaleSets(parts.actions, parts.ledger) : parts.actions,
      unregistrations: parts.unregistrations,
      phaseMetrics: new EphemeralRunnerPhaseMetrics(logger, registry),
      events: eventRecorderFor(parts, config.events ?? 'failures'),
      podMutators: parts.podMutators,
      observers: parts.observers,
      logger,
      now: parts.now,
      deletions: parts.deletions,
    },
    {
      userAgent: config.userAgent,
      terminatedPodGracePeriodSeconds: config.terminatedPodGracePeriodSeconds,
      maxFailures: config.maxFailures,
      failureBackoffBaseMs: config.failureBackoffBaseMs,
      startTimeoutMs: config.startTimeoutMs,
      evictionProtection: config.evictionProtection,
    },
  );

  return completeController(
    parts.manager,
    'ephemeralrunner',
    reconciler,
    (watch) => watch.for(EphemeralRunnerKind, ephemeralRunnerPredicate()).owns(PodKind, ownedPodPredicate()),
    config.maxConcurrentReconciles ?? 2,
  );
}
