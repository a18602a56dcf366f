import { EphemeralRunnerKind, EphemeralRunnerSetKind } from '@aro/api';
import {
  type ControllerParts,
  type EventsMode,
  completeController,
  scaleSetReconcilerDeps,
} from '../shared/controller-parts';
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
  return completeController(
    parts.manager,
    'ephemeralrunnerset',
    new EphemeralRunnerSetReconciler(
      scaleSetReconcilerDeps(parts, config.events, EphemeralRunnerSetMetrics),
      config,
    ),
    (watch) => watch.for(EphemeralRunnerSetKind).owns(EphemeralRunnerKind),
    config.maxConcurrentReconciles ?? 1,
  );
}
