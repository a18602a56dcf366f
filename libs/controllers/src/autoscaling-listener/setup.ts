import type { V1Role } from '@kubernetes/client-node';
import { AutoscalingListenerKind, Labels } from '@aro/api';
import { PodKind, RoleBindingKind, RoleKind, ServiceAccountKind } from '@aro/kube';
import { type ScaleSetControllerConfig, scaleSetControllerSetup } from '../shared/controller-parts';
import {
  AutoscalingListenerReconciler,
  type AutoscalingListenerReconcilerOptions,
} from './autoscaling-listener.reconciler';
import { ListenerControllerMetrics } from './listener-controller-metrics';

export interface AutoscalingListenerControllerConfig
  extends AutoscalingListenerReconcilerOptions, ScaleSetControllerConfig {}

/** The listener a Role or RoleBinding belongs to, from the labels it carries (it lives in another namespace). */
function listenerOfLabels(object: V1Role): Array<{ namespace: string; name: string }> {
  const labels = object.metadata?.labels ?? {};
  const name = labels[Labels.autoscalingListenerName];
  const namespace = labels[Labels.autoscalingListenerNamespace];
  return name && namespace ? [{ namespace, name }] : [];
}

/**
 * Registers the AutoscalingListener controller: it reconciles listeners and is woken by their pods
 * and ServiceAccounts (owned) and by their Roles and RoleBindings (by label). It runs only on the leader.
 */
export const setupAutoscalingListenerController = scaleSetControllerSetup({
  name: 'autoscalinglistener',
  metrics: ListenerControllerMetrics,
  reconciler: (deps, config: AutoscalingListenerControllerConfig) =>
    new AutoscalingListenerReconciler(deps, config),
  watches: (watch) =>
    watch
      .for(AutoscalingListenerKind)
      .owns(PodKind)
      .owns(ServiceAccountKind)
      .watches<V1Role>(RoleKind, listenerOfLabels)
      .watches<V1Role>(RoleBindingKind, listenerOfLabels),
});
