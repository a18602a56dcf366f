import { type ControllerModuleOptions, partsControllerModule } from '../shared/controller-module';
import { type EphemeralRunnerSetControllerConfig, setupEphemeralRunnerSetController } from './setup';

export type EphemeralRunnerSetModuleOptions = ControllerModuleOptions<EphemeralRunnerSetControllerConfig>;

/**
 * The EphemeralRunnerSet controller as a Nest module: keeps a set's EphemeralRunners at the count the
 * listener asks for. Needs the global KubeModule, SecretsModule and ObservabilityModule.
 */
export const EphemeralRunnerSetModule = partsControllerModule(
  'EphemeralRunnerSet',
  setupEphemeralRunnerSetController,
).module;
