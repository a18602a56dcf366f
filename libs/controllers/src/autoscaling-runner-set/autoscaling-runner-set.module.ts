import { controllerModule } from '@aro/kube';
import { controllerPartsOf } from '../shared/controller-parts';
import { type AutoscalingRunnerSetControllerConfig, setupAutoscalingRunnerSetController } from './setup';

export interface AutoscalingRunnerSetModuleOptions extends AutoscalingRunnerSetControllerConfig {
  /** The clock of the time-based branches (tests). */
  now?: () => number;
}

/**
 * The AutoscalingRunnerSet controller as a Nest module: the scale set on the Actions service, its
 * EphemeralRunnerSet and its listener. Needs the global KubeModule, SecretsModule and
 * ObservabilityModule. `listenerImage` may be empty: the app starts, and each scale set records
 * ListenerImageMissing instead of getting a listener.
 */
const AutoscalingRunnerSetController = controllerModule({
  name: 'AutoscalingRunnerSet',
  register: ({ now, ...config }: AutoscalingRunnerSetModuleOptions, providers) =>
    setupAutoscalingRunnerSetController(controllerPartsOf(providers, now), config),
});
export const AutoscalingRunnerSetModule = AutoscalingRunnerSetController.module;
export const AutoscalingRunnerSetRegistration = AutoscalingRunnerSetController.registration;
export const AUTOSCALING_RUNNER_SET_MODULE_OPTIONS = AutoscalingRunnerSetController.optionsToken;
