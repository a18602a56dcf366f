import { type ControllerModuleOptions, partsControllerModule } from '../shared/controller-module';
import { type AutoscalingListenerControllerConfig, setupAutoscalingListenerController } from './setup';

export type AutoscalingListenerModuleOptions = ControllerModuleOptions<AutoscalingListenerControllerConfig>;

/**
 * The AutoscalingListener controller as a Nest module: each listener's pod, ServiceAccount, Role,
 * RoleBinding and config secret. Needs the global KubeModule, SecretsModule and ObservabilityModule.
 */
const AutoscalingListenerController = partsControllerModule(
  'AutoscalingListener',
  setupAutoscalingListenerController,
);
export const AutoscalingListenerModule = AutoscalingListenerController.module;
export const AutoscalingListenerRegistration = AutoscalingListenerController.registration;
export const AUTOSCALING_LISTENER_MODULE_OPTIONS = AutoscalingListenerController.optionsToken;
