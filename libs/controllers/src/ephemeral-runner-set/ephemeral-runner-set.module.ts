import { type ControllerModuleOptions, partsControllerModule } from '../shared/controller-module';
import { type EphemeralRunnerSetControllerConfig, setupEphemeralRunnerSetController } from './setup';

export type EphemeralRunnerSetModuleOptions = ControllerModuleOptions<EphemeralRunnerSetControllerConfig>;

/**
 * The EphemeralRunnerSet controller as a Nest module: keeps a set's EphemeralRunners at the count the
 * listener asks for. Needs the global KubeModule, SecretsModule and ObservabilityModule.
 */
export const {
  module: EphemeralRunnerSetModule,
  controller: EphemeralRunnerSetController,
  optionsToken: EPHEMERAL_RUNNER_SET_MODULE_OPTIONS,
} = partsControllerModule('EphemeralRunnerSet', setupEphemeralRunnerSetController);
