import { ConfigurableModuleBuilder, Inject, Injectable, Module, OnModuleInit } from '@nestjs/common';
import { Registry } from 'prom-client';
import { KubeClient, Manager } from '@aro/kube';
import { LOGGER, Logger } from '@aro/observability';
import { SecretResolver } from '@aro/secrets';
import type { EphemeralRunnerSetReconciler } from './ephemeral-runner-set.reconciler';
import {
  EphemeralRunnerSetControllerConfig,
  ScaleSetControllerParts,
  setupEphemeralRunnerSetController,
} from './setup';

export interface EphemeralRunnerSetModuleOptions extends EphemeralRunnerSetControllerConfig {
  /** The clock of the time-based branches (tests). */
  now?: () => number;
}

export const {
  ConfigurableModuleClass: EphemeralRunnerSetConfigurableModule,
  MODULE_OPTIONS_TOKEN: EPHEMERAL_RUNNER_SET_MODULE_OPTIONS,
} = new ConfigurableModuleBuilder<EphemeralRunnerSetModuleOptions>({ moduleName: 'EphemeralRunnerSet' })
  .setClassMethodName('forRoot')
  .build();

/** The parts every scale-set controller is built from, out of the app's global providers. */
export function scaleSetPartsOf(
  manager: Manager,
  client: KubeClient,
  resolver: SecretResolver,
  logger: Logger,
  registry: Registry,
  now: (() => number) | undefined,
): ScaleSetControllerParts {
  return { manager, client, cache: manager.cache, apiReader: client, resolver, logger, registry, now };
}

/**
 * Registers the EphemeralRunnerSet controller with the manager at module init, before the manager
 * starts (onApplicationBootstrap), so its informers start with the cache.
 */
@Injectable()
export class EphemeralRunnerSetRegistration implements OnModuleInit {
  private registered: EphemeralRunnerSetReconciler | undefined;

  constructor(
    @Inject(EPHEMERAL_RUNNER_SET_MODULE_OPTIONS) private readonly opts: EphemeralRunnerSetModuleOptions,
    private readonly manager: Manager,
    private readonly client: KubeClient,
    private readonly resolver: SecretResolver,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly registry: Registry,
  ) {}

  /** The reconciler as registered; undefined before module init. */
  get reconciler(): EphemeralRunnerSetReconciler | undefined {
    return this.registered;
  }

  onModuleInit(): void {
    const { now, ...config } = this.opts;
    this.registered = setupEphemeralRunnerSetController(
      scaleSetPartsOf(this.manager, this.client, this.resolver, this.logger, this.registry, now),
      config,
    );
  }
}

/**
 * The EphemeralRunnerSet controller as a Nest module: keeps a set's EphemeralRunners at the count the
 * listener asks for. Needs the global KubeModule, SecretsModule and ObservabilityModule.
 */
@Module({ providers: [EphemeralRunnerSetRegistration], exports: [EphemeralRunnerSetRegistration] })
export class EphemeralRunnerSetModule extends EphemeralRunnerSetConfigurableModule {}
