import { EphemeralRunnerKind, EphemeralRunnerSetKind } from '@aro/api';
import { type ScaleSetControllerConfig, scaleSetControllerSetup } from '../shared/controller-parts';
import {
  EphemeralRunnerSetReconciler,
  type EphemeralRunnerSetReconcilerOptions,
} from './ephemeral-runner-set.reconciler';
import { EphemeralRunnerSetMetrics } from './runner-set-metrics';

export interface EphemeralRunnerSetControllerConfig
  extends EphemeralRunnerSetReconcilerOptions, ScaleSetControllerConfig {}

/**
 * Registers the EphemeralRunnerSet controller with a manager: it reconciles EphemeralRunnerSets and
 * is woken by the EphemeralRunners they own. It runs only on the leader.
 */
export const setupEphemeralRunnerSetController = scaleSetControllerSetup({
  name: 'ephemeralrunnerset',
  metrics: EphemeralRunnerSetMetrics,
  reconciler: (deps, config: EphemeralRunnerSetControllerConfig) =>
    new EphemeralRunnerSetReconciler(deps, config),
  watches: (watch, reconciler) =>
    watch
      .for(EphemeralRunnerSetKind, reconciler.watchPredicates.set)
      .owns(EphemeralRunnerKind, reconciler.watchPredicates.runner),
});
