import { controllerModule } from '@aro/kube';
import { controllerPartsOf } from '../shared/controller-parts';
import { type AutoscalingListenerControllerConfig, setupAutoscalingListenerController } from './setup';

export interface AutoscalingListenerModuleOptions extends AutoscalingListenerControllerConfig {
  /** The clock of the time-based branches (tests). */
  now?: () => number;
}

/**
 * The AutoscalingListener controller as a Nest module: each listener's pod, ServiceAccount, Role,
 * RoleBinding and config secret. Needs the global KubeModule, SecretsModule and ObservabilityModule.
 */
const AutoscalingListenerController = controllerModule({
  name: 'AutoscalingListener',
  register: ({ now, ...config }: AutoscalingListenerModuleOptions, providers) =>
    setupAutoscalingListenerController(controllerPartsOf(providers, now), config),
});
export const AutoscalingListenerModule = AutoscalingListenerController.module;
export const AutoscalingListenerRegistration = AutoscalingListenerController.registration;
export const AUTOSCALING_LISTENER_MODULE_OPTIONS = AutoscalingListenerController.optionsToken;
