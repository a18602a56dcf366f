import { type DynamicModule, Module } from '@nestjs/common';
import {
  AutoscalingListenerModule,
  type AutoscalingListenerModuleOptions,
} from '../autoscaling-listener/autoscaling-listener.controller';
import {
  AutoscalingRunnerSetModule,
  type AutoscalingRunnerSetModuleOptions,
} from '../autoscaling-runner-set/autoscaling-runner-set.controller';
import {
  EphemeralRunnerModule,
  type EphemeralRunnerModuleOptions,
} from '../ephemeral-runner/ephemeral-runner.controller';
import {
  EphemeralRunnerSetModule,
  type EphemeralRunnerSetModuleOptions,
} from '../ephemeral-runner-set/ephemeral-runner-set.controller';

export interface ReconcilersModuleOptions {
  ephemeralRunner: EphemeralRunnerModuleOptions;
  ephemeralRunnerSet: EphemeralRunnerSetModuleOptions;
  autoscalingRunnerSet: AutoscalingRunnerSetModuleOptions;
  autoscalingListener: AutoscalingListenerModuleOptions;
}

/**
 * The reconcilers: the four controllers of the v1alpha1 kinds, each defined by defineController and
 * installed in the manager at module init. They read through the watcher (WatchModule), write through
 * the client (KubeModule), reach the Actions service through the secret resolver (SecretsModule) and
 * hand registration removals to the unregistration worker (UnregistrationModule).
 */
@Module({})
export class ReconcilersModule {
  static forRoot(options: ReconcilersModuleOptions): DynamicModule {
    const controllers = [
      EphemeralRunnerModule.forRoot(options.ephemeralRunner),
      EphemeralRunnerSetModule.forRoot(options.ephemeralRunnerSet),
      AutoscalingRunnerSetModule.forRoot(options.autoscalingRunnerSet),
      AutoscalingListenerModule.forRoot(options.autoscalingListener),
    ];
    return { module: ReconcilersModule, imports: controllers, exports: controllers };
  }
}
