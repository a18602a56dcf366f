export {
  AutoscalingRunnerSetReconciler,
  type AutoscalingRunnerSetReconcilerDeps,
  type AutoscalingRunnerSetReconcilerOptions,
} from './autoscaling-runner-set.reconciler';
export { removeCleanupProtection } from './cleanup-protection';
export { classifyScaleSetFailure, type ClassifiedFailure } from '../shared/failure-reasons';
export {
  UNBOUNDED_MAX_RUNNERS,
  buildAutoscalingListener,
  buildEphemeralRunnerSet,
  listenerNameOf,
  runnerScaleSetHash,
  scaleSetIdOf,
} from './runner-scale-set-resources';
export { scaleSetLabelsOf } from './scale-set-registration';
export * from './autoscaling-runner-set.controller';
