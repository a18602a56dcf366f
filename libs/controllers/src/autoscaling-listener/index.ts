export {
  AutoscalingListenerReconciler,
  type AutoscalingListenerReconcilerDeps,
  type AutoscalingListenerReconcilerOptions,
} from './autoscaling-listener.reconciler';
export { buildListenerConfig, type ListenerConfigSettings } from './listener-config';
export { ListenerControllerMetrics } from './listener-controller-metrics';
export {
  buildConfigSecret,
  buildListenerPod,
  buildRole,
  buildRoleBinding,
  buildServiceAccount,
  listenerOwnedLabels,
} from './listener-resources';
export * from './autoscaling-listener.controller';
