import {
  BeforeApplicationShutdown,
  DynamicModule,
  Inject,
  Injectable,
  Module,
  ModuleMetadata,
  OnApplicationShutdown,
  OnModuleInit,
} from '@nestjs/common';
import { DiscoveryModule, DiscoveryService } from '@nestjs/core';
import { TerminusModule } from '@nestjs/terminus';
import { PrometheusModule } from '@willsoto/nestjs-prometheus';
import { KubeConfig } from '@kubernetes/client-node';
import { MultiClient, userAgentFor } from '@aro/actions';
import {
  RunnerExtension,
  actionsClientsFrom,
  isRunnerLifecycleObserver,
  isRunnerPodMutator,
  setupEphemeralRunnerController,
} from '@aro/controllers';
import { InformerCache, KUBE_MANAGER, KubeClient, Manager } from '@aro/kube';
import { LOGGER, Logger, ObservabilityModule, metricsRegistry } from '@aro/observability';
import { SecretResolver } from '@aro/secrets';
import type { ControllerConfig } from './config';
import { HealthController } from './health.controller';

export const CONTROLLER_CONFIG = Symbol('aro.controllerConfig');
const KUBE_CLIENT = Symbol('aro.kubeClient');
const SECRET_RESOLVER = Symbol('aro.secretResolver');

export interface ControllerAppOptions {
  config: ControllerConfig;
  logger: Logger;
  /** A kubeconfig to use instead of the one the environment names (tests). */
  kubeConfig?: KubeConfig;
  /** Extension modules: their providers marked @RunnerExtension() are picked up. */
  imports?: ModuleMetadata['imports'];
  /** Called instead of exiting when leadership is lost (tests). */
  onLeadershipLost?: (manager: Manager) => void;
}

function loadKubeConfig(config: ControllerConfig): KubeConfig {
  const kc = new KubeConfig();
  if (config.KUBECONFIG) kc.loadFromFile(config.KUBECONFIG);
  else kc.loadFromDefault();
  return kc;
}

/**
 * Registers the controllers with the manager once every module is initialised (so extensions from
 * any imported module are found); on shutdown stops the manager before the HTTP server closes, then
 * closes the Actions and Kubernetes clients.
 * The manager is started by main.ts after the HTTP server listens, so probes answer during a long sync.
 */
@Injectable()
class ControllerRegistration implements OnModuleInit, BeforeApplicationShutdown, OnApplicationShutdown {
  constructor(
    @Inject(CONTROLLER_CONFIG) private readonly config: ControllerConfig,
    @Inject(KUBE_MANAGER) private readonly manager: Manager,
    @Inject(KUBE_CLIENT) private readonly client: KubeClient,
    @Inject(SECRET_RESOLVER) private readonly resolver: SecretResolver,
    private readonly multiClient: MultiClient,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly discovery: DiscoveryService,
  ) {}

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
    const config = this.config;
    setupEphemeralRunnerController(
      {
        manager: this.manager,
        client: this.client,
        cache: this.manager.cache,
        apiReader: this.client,
        actions: actionsClientsFrom(this.resolver),
        logger: this.logger,
        podMutators,
        observers,
      },
      {
        userAgent: userAgentFor('runner'),
        namespace: config.WATCH_NAMESPACE,
        maxConcurrentReconciles: config.MAX_CONCURRENT_RECONCILES,
        unregistrationWorkers: config.UNREGISTRATION_WORKERS,
        terminatedPodGracePeriodSeconds: config.TERMINATED_POD_GRACE_PERIOD_SECONDS,
        maxFailures: config.MAX_POD_FAILURES,
        failureBackoffBaseMs: config.FAILURE_BACKOFF_BASE_SECONDS * 1000,
        orphanSweepIntervalMs: config.ORPHAN_SWEEP_INTERVAL_SECONDS * 1000,
        orphanGraceMs: config.ORPHAN_GRACE_SECONDS * 1000,
        unregistrationDrainTimeoutMs: config.SHUTDOWN_TIMEOUT_SECONDS * 1000,
        events: config.EVENTS,
      },
    );
  }

  /** Drains reconciles and removals and releases the lease while the probes still answer. */
  async beforeApplicationShutdown(): Promise<void> {
    await this.manager.stop();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.multiClient.close();
    this.client.close();
  }
}

@Module({})
export class ControllerAppModule {
  static forRoot(options: ControllerAppOptions): DynamicModule {
    const { config, logger } = options;
    const registry = metricsRegistry();
    const kubeConfig = options.kubeConfig ?? loadKubeConfig(config);
    const client = new KubeClient(kubeConfig, {
      userAgent: userAgentFor('controller'),
      fieldManager: 'aro-controller',
      logger,
    });
    const cache = new InformerCache(client, {
      namespace: config.WATCH_NAMESPACE || undefined,
      logger: logger.child({ component: 'cache' }),
      registry,
    });
    const leaseNamespace = config.LEADER_ELECTION_NAMESPACE ?? config.POD_NAMESPACE ?? 'default';
    const manager = new Manager({
      client,
      cache,
      logger,
      registry,
      gracefulShutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_SECONDS * 1000,
      onLeadershipLost: options.onLeadershipLost,
      leaderElection: config.LEADER_ELECTION
        ? {
            leaseName: config.LEADER_ELECTION_ID,
            leaseNamespace,
            leaseDurationMs: config.LEASE_DURATION_SECONDS * 1000,
            renewDeadlineMs: config.RENEW_DEADLINE_SECONDS * 1000,
            retryPeriodMs: config.RETRY_PERIOD_SECONDS * 1000,
          }
        : false,
    });
    const multiClient = new MultiClient({ logger: logger.child({ component: 'actions' }), registry });
    const resolver = new SecretResolver({
      kube: client,
      multiClient,
      logger: logger.child({ component: 'secrets' }),
    });

    return {
      module: ControllerAppModule,
      imports: [
        ObservabilityModule.forRoot({ logger, registry }),
        TerminusModule.forRoot({ logger: false }),
        PrometheusModule.register({
          path: '/metrics',
          // Process metrics are registered once per registry; a second app in one process (tests) reuses them.
          defaultMetrics: {
            enabled: registry.getSingleMetric('process_cpu_user_seconds_total') === undefined,
          },
        }),
        DiscoveryModule,
        ...(options.imports ?? []),
      ],
      controllers: [HealthController],
      providers: [
        { provide: CONTROLLER_CONFIG, useValue: config },
        { provide: KUBE_MANAGER, useValue: manager },
        { provide: KUBE_CLIENT, useValue: client },
        { provide: SECRET_RESOLVER, useValue: resolver },
        { provide: MultiClient, useValue: multiClient },
        ControllerRegistration,
      ],
      exports: [KUBE_MANAGER],
    };
  }
}
