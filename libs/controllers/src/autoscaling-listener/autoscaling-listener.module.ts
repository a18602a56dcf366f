import { type ControllerModuleOptions, partsControllerModule } from '../shared/controller-module';
import { type AutoscalingListenerControllerConfig, setupAutoscalingListenerController } from './setup';

export type AutoscalingListenerModuleOptions = ControllerModuleOptions<AutoscalingListenerControllerConfig>;

/**
 * The AutoscalingListener controller as a Nest module: each listener's pod, ServiceAccount, Role,
 * RoleBinding and config secret. Needs the global KubeModule, SecretsModule and ObservabilityModule.
 */
export const AutoscalingListenerModule = partsControllerModule(
  'AutoscalingListener',
  setupAutoscalingListenerController,
).module;
