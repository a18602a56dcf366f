import { EphemeralRunnerKind, EphemeralRunnerSetKind } from '@aro/api';
import { type ControllerOptions, defineController } from '../shared/define-controller';
import {
  EphemeralRunnerSetReconciler,
  type EphemeralRunnerSetReconcilerOptions,
} from './ephemeral-runner-set.reconciler';
import { EphemeralRunnerSetMetrics } from './runner-set-metrics';

export type EphemeralRunnerSetModuleOptions = EphemeralRunnerSetReconcilerOptions & ControllerOptions;

/**
 * The EphemeralRunnerSet controller: keeps a set's EphemeralRunners at the count the listener asks
 * for, woken by the sets and the EphemeralRunners they own. Leader-only.
 */
export const ephemeralRunnerSetController = defineController({
  name: 'EphemeralRunnerSet',
  metrics: (registry) => new EphemeralRunnerSetMetrics(registry),
  reconciler: (deps, config: EphemeralRunnerSetReconcilerOptions) =>
    new EphemeralRunnerSetReconciler(deps, config),
  watches: (watch, reconciler) =>
    watch
      .for(EphemeralRunnerSetKind, reconciler.watchPredicates.set)
      .owns(EphemeralRunnerKind, reconciler.watchPredicates.runner),
});
export const EphemeralRunnerSetModule = ephemeralRunnerSetController.module;
/** Its provider in the app: `app.get(EphemeralRunnerSetController).reconciler`. */
export const EphemeralRunnerSetController = ephemeralRunnerSetController.controller;
