import type { Registry } from 'prom-client';
import { EphemeralRunnerKind, EphemeralRunnerSetKind } from '@aro/api';
import { ControllerBuilder, KubeClient, Manager, Reader, resourceVersionChangedPredicate } from '@aro/kube';
import type { Logger } from '@aro/observability';
import { metricsRegistry } from '@aro/observability';
import type { SecretResolver } from '@aro/secrets';
import { EventRecorder } from '../events/event-recorder';
import {
  EphemeralRunnerSetReconciler,
  type EphemeralRunnerSetReconcilerOptions,
} from './ephemeral-runner-set.reconciler';
import { EphemeralRunnerSetMetrics } from './runner-set-metrics';

/** What every scale-set controller is built from; the app (or a test) makes one of each. */
export interface ScaleSetControllerParts {
  manager: Manager;
  client: KubeClient;
  /** The manager's informer cache. */
  cache: Reader;
  /** Uncached reads; the client itself is the usual choice. */
  apiReader?: Reader;
  /** Credentials, proxy, CA and Actions clients for a scale set's GitHub configuration. */
  resolver: SecretResolver;
  logger: Logger;
  registry?: Registry;
  now?: () => number;
}

export interface EphemeralRunnerSetControllerConfig extends EphemeralRunnerSetReconcilerOptions {
  maxConcurrentReconciles?: number;
  events?: 'all' | 'failures' | 'none';
}

export function eventRecorderFor(
  parts: ScaleSetControllerParts,
  mode: 'all' | 'failures' | 'none' | undefined,
): EventRecorder | undefined {
  return mode === 'none'
    ? undefined
    : new EventRecorder(
        parts.client,
        'aro-controller',
        parts.logger.child({ component: 'events' }),
        mode ?? 'all',
      );
}

/**
 * Registers the EphemeralRunnerSet controller with a manager: it reconciles EphemeralRunnerSets and
 * is woken by the EphemeralRunners they own. It runs only on the leader.
 */
export function setupEphemeralRunnerSetController(
  parts: ScaleSetControllerParts,
  config: EphemeralRunnerSetControllerConfig = {},
): EphemeralRunnerSetReconciler {
  const registry = parts.registry ?? metricsRegistry();
  const reconciler = new EphemeralRunnerSetReconciler(
    {
      client: parts.client,
      cache: parts.cache,
      resolver: parts.resolver,
      metrics: new EphemeralRunnerSetMetrics(registry),
      events: eventRecorderFor(parts, config.events),
      logger: parts.logger,
      now: parts.now,
    },
    config,
  );
  new ControllerBuilder(parts.manager, 'ephemeralrunnerset')
    .for(EphemeralRunnerSetKind)
    .owns(EphemeralRunnerKind)
    .withEventFilter(resourceVersionChangedPredicate)
    .withOptions({ maxConcurrentReconciles: config.maxConcurrentReconciles ?? 1 })
    .complete(reconciler);
  return reconciler;
}
