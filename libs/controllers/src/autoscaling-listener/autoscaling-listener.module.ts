import { ConfigurableModuleBuilder, Inject, Injectable, Module, OnModuleInit } from '@nestjs/common';
import { Registry } from 'prom-client';
import { KubeClient, Manager } from '@aro/kube';
import { LOGGER, Logger } from '@aro/observability';
import { SecretResolver } from '@aro/secrets';
import { scaleSetPartsOf } from '../ephemeral-runner-set/ephemeral-runner-set.module';
import type { AutoscalingListenerReconciler } from './autoscaling-listener.reconciler';
import { AutoscalingListenerControllerConfig, setupAutoscalingListenerController } from './setup';

export interface AutoscalingListenerModuleOptions extends AutoscalingListenerControllerConfig {
  /** The clock of the time-based branches (tests). */
  now?: () => number;
}

export const {
  ConfigurableModuleClass: AutoscalingListenerConfigurableModule,
  MODULE_OPTIONS_TOKEN: AUTOSCALING_LISTENER_MODULE_OPTIONS,
} = new ConfigurableModuleBuilder<AutoscalingListenerModuleOptions>({ moduleName: 'AutoscalingListener' })
  .setClassMethodName('forRoot')
  .build();

/** Registers the AutoscalingListener controller with the manager at module init. */
@Injectable()
export class AutoscalingListenerRegistration implements OnModuleInit {
  private registered: AutoscalingListenerReconciler | undefined;

  constructor(
    @Inject(AUTOSCALING_LISTENER_MODULE_OPTIONS) private readonly opts: AutoscalingListenerModuleOptions,
    private readonly manager: Manager,
    private readonly client: KubeClient,
    private readonly resolver: SecretResolver,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly registry: Registry,
  ) {}

  /** The reconciler as registered; undefined before module init. */
  get reconciler(): AutoscalingListenerReconciler | undefined {
    return this.registered;
  }

  onModuleInit(): void {
    const { now, ...config } = this.opts;
    this.registered = setupAutoscalingListenerController(
      scaleSetPartsOf(this.manager, this.client, this.resolver, this.logger, this.registry, now),
      config,
    );
  }
}

/**
 * The AutoscalingListener controller as a Nest module: each listener's pod, ServiceAccount, Role,
 * RoleBinding and config secret. Needs the global KubeModule, SecretsModule and ObservabilityModule.
 */
@Module({ providers: [AutoscalingListenerRegistration], exports: [AutoscalingListenerRegistration] })
export class AutoscalingListenerModule extends AutoscalingListenerConfigurableModule {}
