import { type ControllerModuleOptions, partsControllerModule } from '../shared/controller-module';
import { type AutoscalingRunnerSetControllerConfig, setupAutoscalingRunnerSetController } from './setup';

export type AutoscalingRunnerSetModuleOptions = ControllerModuleOptions<AutoscalingRunnerSetControllerConfig>;

/**
 * The AutoscalingRunnerSet controller as a Nest module: the scale set on the Actions service, its
 * EphemeralRunnerSet and its listener. Needs the global KubeModule, SecretsModule and
 * ObservabilityModule. `listenerImage` may be empty: the app starts, and each scale set records
 * ListenerImageMissing instead of getting a listener.
 */
export const AutoscalingRunnerSetModule = partsControllerModule(
  'AutoscalingRunnerSet',
  setupAutoscalingRunnerSetController,
).module;
