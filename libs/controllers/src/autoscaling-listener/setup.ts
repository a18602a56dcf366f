import type { V1Role } from '@kubernetes/client-node';
import { AutoscalingListenerKind, Labels } from '@aro/api';
import { PodKind, RoleBindingKind, RoleKind, ServiceAccountKind } from '@aro/kube';
import {
  type ControllerParts,
  type ScaleSetControllerConfig,
  scaleSetControllerSetup,
} from '../shared/controller-parts';
import {
  AutoscalingListenerReconciler,
  type AutoscalingListenerReconcilerDeps,
  type AutoscalingListenerReconcilerOptions,
} from './autoscaling-listener.reconciler';
import { SharedConfigSecretCache } from './shared-config-cache';
import { ListenerControllerMetrics } from './listener-controller-metrics';

export interface AutoscalingListenerControllerConfig
  extends AutoscalingListenerReconcilerOptions, ScaleSetControllerConfig {
  /** The listeners' namespace (the controller's): where shared mode's configs Secret is watched. */
  controllerNamespace?: string;
}

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
 * In shared listener mode the configs Secret is watched beside it (SharedConfigSecretCache), also only
 * on the leader.
 */
export function setupAutoscalingListenerController(
  parts: ControllerParts,
  config: AutoscalingListenerControllerConfig = {},
): AutoscalingListenerReconciler {
  const sharedConfigCache =
    config.listenerMode === 'shared' && config.controllerNamespace && config.sharedConfigSecretName
      ? new SharedConfigSecretCache(parts.client, config.controllerNamespace, config.sharedConfigSecretName, {
          logger: parts.logger,
          registry: parts.registry,
        })
      : undefined;
  if (sharedConfigCache) parts.manager.add(sharedConfigCache);
  return setupListenerController(parts, { ...config, sharedConfigCache });
}

const setupListenerController = scaleSetControllerSetup({
  name: 'autoscalinglistener',
  metrics: ListenerControllerMetrics,
  reconciler: (
    deps,
    config: AutoscalingListenerControllerConfig &
      Pick<AutoscalingListenerReconcilerDeps, 'sharedConfigCache'>,
  ) => new AutoscalingListenerReconciler({ ...deps, sharedConfigCache: config.sharedConfigCache }, config),
  watches: (watch) =>
    watch
      .for(AutoscalingListenerKind)
      .owns(PodKind)
      .owns(ServiceAccountKind)
      .watches<V1Role>(RoleKind, listenerOfLabels)
      .watches<V1Role>(RoleBindingKind, listenerOfLabels),
});
