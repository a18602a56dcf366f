import { ConfigurableModuleBuilder, Inject, Injectable, Module, OnModuleInit } from '@nestjs/common';
import { DiscoveryModule, DiscoveryService } from '@nestjs/core';
import { Registry } from 'prom-client';
import { KubeClient, Manager } from '@aro/kube';
import { LOGGER, Logger } from '@aro/observability';
import { SecretResolver } from '@aro/secrets';
import { RunnerExtension, isRunnerLifecycleObserver, isRunnerPodMutator } from './extensions';
import {
  EphemeralRunnerController,
  EphemeralRunnerControllerConfig,
  setupEphemeralRunnerController,
} from './setup';
import { ScaleSetLedger } from './scale-set-ledger';
import { UnregistrationQueue, actionsClientsFrom } from './unregistration-queue';

export interface EphemeralRunnerModuleOptions extends EphemeralRunnerControllerConfig {
  /**
   * Read through the client where the cache is not safe evidence (the default). `false` hands the
   * controller no reader, which then defaults to the client as the seed's does (tests of that default).
   */
  uncachedReads?: boolean;
  /** The clock of the time-based branches (tests). */
  now?: () => number;
}

export const {
  ConfigurableModuleClass: EphemeralRunnerConfigurableModule,
  MODULE_OPTIONS_TOKEN: EPHEMERAL_RUNNER_MODULE_OPTIONS,
} = new ConfigurableModuleBuilder<EphemeralRunnerModuleOptions>({ moduleName: 'EphemeralRunner' })
  .setClassMethodName('forRoot')
  .build();

/**
 * Registers the EphemeralRunner controller with the manager at module init, with the runner
 * extensions (providers marked @RunnerExtension()) of every module of the app. Nest instantiates every
 * provider before the first onModuleInit, so extensions from modules imported after this one are
 * found too; the manager starts later, in onApplicationBootstrap, so the controller's informers start
 * with the cache.
 */
@Injectable()
export class EphemeralRunnerRegistration implements OnModuleInit {
  private registered: EphemeralRunnerController | undefined;

  constructor(
    @Inject(EPHEMERAL_RUNNER_MODULE_OPTIONS) private readonly opts: EphemeralRunnerModuleOptions,
    private readonly manager: Manager,
    private readonly client: KubeClient,
    private readonly resolver: SecretResolver,
    private readonly unregistrations: UnregistrationQueue,
    private readonly ledger: ScaleSetLedger,
    private readonly discovery: DiscoveryService,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly registry: Registry,
  ) {}

  /** The controller as registered; undefined before module init. */
  get controller(): EphemeralRunnerController | undefined {
    return this.registered;
  }

  onModuleInit(): void {
    const extensions = this.discovery
      .getProviders({ metadataKey: RunnerExtension.KEY })
      .map((wrapper) => wrapper.instance as unknown);
    const podMutators = extensions.filter(isRunnerPodMutator);
    const observers = extensions.filter(isRunnerLifecycleObserver);
    if (extensions.length > 0) {
      this.logger.info('Loaded runner extensions', {
        podMutators: podMutators.map((m) => m.name),
        observers: observers.map((o) => o.name),
      });
    }
    const { uncachedReads = true, now, ...config } = this.opts;
    this.registered = setupEphemeralRunnerController(
      {
        manager: this.manager,
        client: this.client,
        cache: this.manager.cache,
        apiReader: uncachedReads ? this.client : undefined,
        actions: actionsClientsFrom(this.resolver),
        unregistrations: this.unregistrations,
        ledger: this.ledger,
        logger: this.logger,
        registry: this.registry,
        podMutators,
        observers,
        now,
      },
      config,
    );
  }
}

/**
 * The EphemeralRunner controller as a Nest module: one runner, one pod, one job. Needs the global
 * KubeModule, SecretsModule, UnregistrationModule and ObservabilityModule.
 */
@Module({
  imports: [DiscoveryModule],
  providers: [EphemeralRunnerRegistration],
  exports: [EphemeralRunnerRegistration],
})
export class EphemeralRunnerModule extends EphemeralRunnerConfigurableModule {}
