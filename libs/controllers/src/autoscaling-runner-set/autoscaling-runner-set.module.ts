import { controllerModule } from '@aro/kube';
import { type ControllerModuleOptions } from '../shared/controller-module';
import { controllerPartsOf } from '../shared/controller-parts';
import { ScaleSetLedger } from '../registrations/scale-set-ledger';
import { type AutoscalingRunnerSetControllerConfig, setupAutoscalingRunnerSetController } from './setup';

export type AutoscalingRunnerSetModuleOptions = ControllerModuleOptions<AutoscalingRunnerSetControllerConfig>;

/**
 * The AutoscalingRunnerSet controller as a Nest module: the scale set on the Actions service, its
 * EphemeralRunnerSet and its listener. Needs the global KubeModule, SecretsModule,
 * UnregistrationModule (the ledger a deleted scale set leaves) and ObservabilityModule.
 * `listenerImage` may be empty: the app starts, and each scale set records ListenerImageMissing
 * instead of getting a listener.
 */
export const AutoscalingRunnerSetModule = controllerModule({
  name: 'AutoscalingRunnerSet',
  register: ({ now, ...config }: AutoscalingRunnerSetModuleOptions, providers) =>
    setupAutoscalingRunnerSetController(controllerPartsOf(providers, now), config, providers(ScaleSetLedger)),
}).module;
