import type { V1Role } from '@kubernetes/client-node';
import { AutoscalingListenerKind, Labels } from '@aro/api';
import { PodKind, RoleBindingKind, RoleKind, ServiceAccountKind } from '@aro/kube';
import { type ControllerOptions, defineController } from '../shared/define-controller';
import {
  AutoscalingListenerReconciler,
  type AutoscalingListenerReconcilerOptions,
} from './autoscaling-listener.reconciler';
import { SharedConfigSecretCache } from './shared-config-cache';
import { ListenerControllerMetrics } from './listener-controller-metrics';

export interface AutoscalingListenerControllerConfig extends AutoscalingListenerReconcilerOptions {
  /** The listeners' namespace (the controller's): where shared mode's configs Secret is watched. */
  controllerNamespace?: string;
}

export type AutoscalingListenerModuleOptions = AutoscalingListenerControllerConfig & ControllerOptions;

/** The listener a Role or RoleBinding belongs to, from the labels it carries (it lives in another namespace). */
function listenerOfLabels(object: V1Role): Array<{ namespace: string; name: string }> {
  const labels = object.metadata?.labels ?? {};
  const name = labels[Labels.autoscalingListenerName];
  const namespace = labels[Labels.autoscalingListenerNamespace];
  return name && namespace ? [{ namespace, name }] : [];
}

/**
 * The AutoscalingListener controller: each listener's pod, ServiceAccount, Role, RoleBinding and
 * config secret. Woken by listeners, their pods and ServiceAccounts (owned) and their Roles and
 * RoleBindings (by label). In shared listener mode the configs Secret is watched beside it
 * (SharedConfigSecretCache), also only on the leader.
 */
export const autoscalingListenerController = defineController({
  name: 'AutoscalingListener',
  metrics: (registry) => new ListenerControllerMetrics(registry),
  reconciler: (deps, config: AutoscalingListenerControllerConfig) => {
    const sharedConfigCache =
      config.listenerMode === 'shared' && config.controllerNamespace && config.sharedConfigSecretName
        ? new SharedConfigSecretCache(
            deps.client,
            config.controllerNamespace,
            config.sharedConfigSecretName,
            {
              logger: deps.logger,
              registry: deps.registry,
            },
          )
        : undefined;
    if (sharedConfigCache) deps.manager.add(sharedConfigCache);
    return new AutoscalingListenerReconciler({ ...deps, sharedConfigCache }, config);
  },
  watches: (watch) =>
    watch
      .for(AutoscalingListenerKind)
      .owns(PodKind)
      .owns(ServiceAccountKind)
      .watches<V1Role>(RoleKind, listenerOfLabels)
      .watches<V1Role>(RoleBindingKind, listenerOfLabels),
});
export const AutoscalingListenerModule = autoscalingListenerController.module;
/** Its provider in the app: `app.get(AutoscalingListenerController).reconciler`. */
export const AutoscalingListenerController = autoscalingListenerController.controller;
