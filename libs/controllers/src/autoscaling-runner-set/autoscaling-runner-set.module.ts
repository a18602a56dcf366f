import { ConfigurableModuleBuilder, Inject, Injectable, Module, OnModuleInit } from '@nestjs/common';
import { Registry } from 'prom-client';
import { KubeClient, Manager } from '@aro/kube';
import { LOGGER, Logger } from '@aro/observability';
import { SecretResolver } from '@aro/secrets';
import { scaleSetPartsOf } from '../ephemeral-runner-set/ephemeral-runner-set.module';
import type { AutoscalingRunnerSetReconciler } from './autoscaling-runner-set.reconciler';
import { AutoscalingRunnerSetControllerConfig, setupAutoscalingRunnerSetController } from './setup';

export interface AutoscalingRunnerSetModuleOptions extends AutoscalingRunnerSetControllerConfig {
  /** The clock of the time-based branches (tests). */
  now?: () => number;
}

export const {
  ConfigurableModuleClass: AutoscalingRunnerSetConfigurableModule,
  MODULE_OPTIONS_TOKEN: AUTOSCALING_RUNNER_SET_MODULE_OPTIONS,
} = new ConfigurableModuleBuilder<AutoscalingRunnerSetModuleOptions>({ moduleName: 'AutoscalingRunnerSet' })
  .setClassMethodName('forRoot')
  .build();

/** Registers the AutoscalingRunnerSet controller with the manager at module init. */
@Injectable()
export class AutoscalingRunnerSetRegistration implements OnModuleInit {
  private registered: AutoscalingRunnerSetReconciler | undefined;

  constructor(
    @Inject(AUTOSCALING_RUNNER_SET_MODULE_OPTIONS) private readonly opts: AutoscalingRunnerSetModuleOptions,
    private readonly manager: Manager,
    private readonly client: KubeClient,
    private readonly resolver: SecretResolver,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly registry: Registry,
  ) {}

  /** The reconciler as registered; undefined before module init. */
  get reconciler(): AutoscalingRunnerSetReconciler | undefined {
    return this.registered;
  }

  onModuleInit(): void {
    const { now, ...config } = this.opts;
    this.registered = setupAutoscalingRunnerSetController(
      scaleSetPartsOf(this.manager, this.client, this.resolver, this.logger, this.registry, now),
      config,
    );
  }
}

/**
 * The AutoscalingRunnerSet controller as a Nest module: the scale set on the Actions service, its
 * EphemeralRunnerSet and its listener. Needs the global KubeModule, SecretsModule and
 * ObservabilityModule. `listenerImage` may be empty: the app starts, and each scale set records
 * ListenerImageMissing instead of getting a listener.
 */
@Module({ providers: [AutoscalingRunnerSetRegistration], exports: [AutoscalingRunnerSetRegistration] })
export class AutoscalingRunnerSetModule extends AutoscalingRunnerSetConfigurableModule {}
