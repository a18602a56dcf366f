import { controllerModule } from '@aro/kube';
import { controllerPartsOf } from '../shared/controller-parts';
import { type EphemeralRunnerSetControllerConfig, setupEphemeralRunnerSetController } from './setup';

export interface EphemeralRunnerSetModuleOptions extends EphemeralRunnerSetControllerConfig {
  /** The clock of the time-based branches (tests). */
  now?: () => number;
}

/**
 * The EphemeralRunnerSet controller as a Nest module: keeps a set's EphemeralRunners at the count the
 * listener asks for. Needs the global KubeModule, SecretsModule and ObservabilityModule.
 */
const EphemeralRunnerSetController = controllerModule({
  name: 'EphemeralRunnerSet',
  register: ({ now, ...config }: EphemeralRunnerSetModuleOptions, providers) =>
    setupEphemeralRunnerSetController(controllerPartsOf(providers, now), config),
});
export const EphemeralRunnerSetModule = EphemeralRunnerSetController.module;
export const EphemeralRunnerSetRegistration = EphemeralRunnerSetController.registration;
export const EPHEMERAL_RUNNER_SET_MODULE_OPTIONS = EphemeralRunnerSetController.optionsToken;
