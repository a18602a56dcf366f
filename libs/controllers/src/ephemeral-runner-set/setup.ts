import { EphemeralRunnerKind, EphemeralRunnerSetKind } from '@aro/api';
import { ControllerBuilder, resourceVersionChangedPredicate } from '@aro/kube';
import { type ControllerParts, type EventsMode, scaleSetReconcilerDeps } from '../shared/controller-parts';
import {
  EphemeralRunnerSetReconciler,
  type EphemeralRunnerSetReconcilerOptions,
} from './ephemeral-runner-set.reconciler';
import { EphemeralRunnerSetMetrics } from './runner-set-metrics';

export interface EphemeralRunnerSetControllerConfig extends EphemeralRunnerSetReconcilerOptions {
  maxConcurrentReconciles?: number;
  events?: EventsMode;
}

/**
 * Registers the EphemeralRunnerSet controller with a manager: it reconciles EphemeralRunnerSets and
 * is woken by the EphemeralRunners they own. It runs only on the leader.
 */
export function setupEphemeralRunnerSetController(
  parts: ControllerParts,
  config: EphemeralRunnerSetControllerConfig = {},
): EphemeralRunnerSetReconciler {
  const reconciler = new EphemeralRunnerSetReconciler(
    scaleSetReconcilerDeps(parts, config.events, EphemeralRunnerSetMetrics),
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
