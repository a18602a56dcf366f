import { type ControllerModuleOptions, partsControllerModule } from '../shared/controller-module';
import { type AutoscalingListenerControllerConfig, setupAutoscalingListenerController } from './setup';

export type AutoscalingListenerModuleOptions = ControllerModuleOptions<AutoscalingListenerControllerConfig>;

/**
 * The AutoscalingListener controller as a Nest module: each listener's pod, ServiceAccount, Role,
 * RoleBinding and config secret. Needs the global KubeModule, SecretsModule and ObservabilityModule.
 */
const AutoscalingListenerParts = partsControllerModule(
  'AutoscalingListener',
  setupAutoscalingListenerController,
);
export const AutoscalingListenerModule = AutoscalingListenerParts.module;
export const AutoscalingListenerController = AutoscalingListenerParts.controller;
export const AUTOSCALING_LISTENER_MODULE_OPTIONS = AutoscalingListenerParts.optionsToken;
