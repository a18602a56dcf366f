import { readFileSync } from 'node:fs';
import { DynamicModule, Module } from '@nestjs/common';
import type { KubeConfig } from '@kubernetes/client-node';
import { ActionsModule, ActionsModuleOptions, userAgentFor } from '@aro/actions';
import {
  AutoscalingListenerModuleOptions,
  AutoscalingRunnerSetModuleOptions,
  EphemeralRunnerModuleOptions,
  EphemeralRunnerSetModuleOptions,
  EvictionWebhookModule,
  EvictionWebhookModuleOptions,
  ReconcilersModule,
  UnregistrationModule,
  UnregistrationModuleOptions,
} from '@aro/controllers';
import {
  KubeModule,
  KubeModuleOptions,
  Manager,
  ManagerStartMode,
  WatchModule,
  WatchModuleOptions,
} from '@aro/kube';
import { Logger, ObservabilityModule } from '@aro/observability';
import { SecretsModule, SecretsModuleOptions } from '@aro/secrets';
import { ConfigError, type ControllerConfig } from './config';
import type { ExtensionModule } from './extensions';
import { HealthModule } from './health/health.module';
import { FleetPageModule } from './fleet/fleet.module';

export interface ControllerAppOptions {
  config: ControllerConfig;
  logger: Logger;
  /** Extension modules (loaded from ARO_EXTENSIONS), imported beside the app's own. */
  extensions?: ExtensionModule[];
  /** A kubeconfig to use instead of the one the environment names (tests). */
  kubeConfig?: KubeConfig;
  /** When the manager starts (main.ts: `background`, after listen; tests: `manual` to arrange first). */
  managerStart?: ManagerStartMode;
  /** Called instead of exiting when leadership is lost (tests). */
  onLeadershipLost?: (manager: Manager) => void;
  /** The clock of the reconciler's time-based branches (tests). */
  now?: () => number;
  /**
   * What the environment cannot say, for tests: sub-second timings, a controller without uncached
   * reads. Merged over what `config` gives each module.
   */
  overrides?: {
    ephemeralRunner?: Partial<EphemeralRunnerModuleOptions>;
    unregistration?: Partial<UnregistrationModuleOptions>;
    actions?: ActionsModuleOptions;
    ephemeralRunnerSet?: Partial<EphemeralRunnerSetModuleOptions>;
    autoscalingRunnerSet?: Partial<AutoscalingRunnerSetModuleOptions>;
    autoscalingListener?: Partial<AutoscalingListenerModuleOptions>;
    evictionWebhook?: Partial<EvictionWebhookModuleOptions>;
  };
}

/** What each module is given, from the validated environment. */
export function moduleOptionsFrom(options: ControllerAppOptions) {
  const { config, overrides = {} } = options;
  const kube: KubeModuleOptions = {
    kubeConfig: options.kubeConfig,
    kubeconfigPath: config.KUBECONFIG,
    userAgent: userAgentFor('controller'),
    fieldManager: 'aro-controller',
    gracefulShutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_SECONDS * 1000,
    start: options.managerStart,
    onLeadershipLost: options.onLeadershipLost,
    leaderElection: config.LEADER_ELECTION
      ? {
          leaseName: config.LEADER_ELECTION_ID,
          leaseNamespace: config.LEADER_ELECTION_NAMESPACE ?? config.POD_NAMESPACE ?? 'default',
          leaseDurationMs: config.LEASE_DURATION_SECONDS * 1000,
          renewDeadlineMs: config.RENEW_DEADLINE_SECONDS * 1000,
          retryPeriodMs: config.RETRY_PERIOD_SECONDS * 1000,
        }
      : false,
  };
  const watch: WatchModuleOptions = {
    namespace: config.WATCH_NAMESPACE,
    // Listeners and their pods, ServiceAccounts and config secrets live in the controller's namespace:
    // a single-namespace cache must watch it too, or the listener controller reads nothing there.
    extraNamespaces: [controllerNamespaceOf(config)],
  };
  const secrets: SecretsModuleOptions = {
    azureKeyVault: {
      authorityHost: config.AZURE_AUTHORITY_HOST || undefined,
      disableInstanceDiscovery: config.AZURE_KEY_VAULT_DISABLE_INSTANCE_DISCOVERY,
      disableChallengeResourceVerification: config.AZURE_KEY_VAULT_DISABLE_CHALLENGE_RESOURCE_VERIFICATION,
      caCertificates: config.AZURE_KEY_VAULT_CA_FILE
        ? [readCaFile(config.AZURE_KEY_VAULT_CA_FILE)]
        : undefined,
    },
  };
  const ephemeralRunner: EphemeralRunnerModuleOptions = {
    userAgent: userAgentFor('runner'),
    maxConcurrentReconciles: config.MAX_CONCURRENT_RECONCILES,
    terminatedPodGracePeriodSeconds: config.TERMINATED_POD_GRACE_PERIOD_SECONDS,
    maxFailures: config.MAX_POD_FAILURES,
    failureBackoffBaseMs: config.FAILURE_BACKOFF_BASE_SECONDS * 1000,
    startTimeoutMs: config.RUNNER_START_TIMEOUT,
    evictionProtection: config.BUSY_RUNNER_EVICTION_PROTECTION,
    events: config.EVENTS,
    now: options.now,
    ...overrides.ephemeralRunner,
  };
  const unregistration: UnregistrationModuleOptions = {
    namespace: config.WATCH_NAMESPACE,
    workers: config.UNREGISTRATION_WORKERS,
    orphanSweepIntervalMs: config.ORPHAN_SWEEP_INTERVAL_SECONDS * 1000,
    orphanGraceMs: config.ORPHAN_GRACE_SECONDS * 1000,
    drainTimeoutMs: config.SHUTDOWN_TIMEOUT_SECONDS * 1000,
    // The Downward API's POD_NAMESPACE is the controller's own namespace, where its Role is.
    ledgerNamespace: config.POD_NAMESPACE || config.WATCH_NAMESPACE || 'default',
    ...overrides.unregistration,
  };
  const ephemeralRunnerSet: EphemeralRunnerSetModuleOptions = {
    excludeLabelPropagationPrefixes: config.EXCLUDE_LABEL_PROPAGATION_PREFIXES,
    events: config.EVENTS,
    now: options.now,
    upstreamCompatibility: config.UPSTREAM_COMPATIBILITY,
    ...overrides.ephemeralRunnerSet,
  };
  const autoscalingRunnerSet: AutoscalingRunnerSetModuleOptions = {
    controllerNamespace: controllerNamespaceOf(config),
    // May be empty: EphemeralRunner-only users need no listener; each scale set then records why
    // it gets none (ListenerImageMissing) instead of the app refusing to start.
    listenerImage: config.CONTROLLER_MANAGER_CONTAINER_IMAGE,
    listenerImagePullSecrets: config.LISTENER_IMAGE_PULL_SECRETS,
    excludeLabelPropagationPrefixes: config.EXCLUDE_LABEL_PROPAGATION_PREFIXES,
    updateStrategy: config.UPDATE_STRATEGY,
    events: config.EVENTS,
    now: options.now,
    ...overrides.autoscalingRunnerSet,
  };
  const autoscalingListener: AutoscalingListenerModuleOptions = {
    metricsAddr: config.LISTENER_METRICS_ADDR,
    metricsEndpoint: config.LISTENER_METRICS_ENDPOINT,
    credentialRefreshIntervalMs: config.LISTENER_CREDENTIAL_REFRESH_SECONDS * 1000,
    listenerMode: config.LISTENER_MODE,
    sharedServiceAccountName: config.LISTENER_SHARED_SERVICE_ACCOUNT,
    sharedConfigSecretName: config.LISTENER_SHARED_CONFIG_SECRET,
    controllerNamespace: controllerNamespaceOf(config),
    // A listener takes a level name; a controller silenced by a zap level above error still lets its
    // listeners report errors.
    logLevel: config.LOG_LEVEL === 'silent' ? 'error' : config.LOG_LEVEL,
    logFormat: config.LOG_FORMAT,
    events: config.EVENTS,
    now: options.now,
    ...overrides.autoscalingListener,
  };
  const evictionWebhook: EvictionWebhookModuleOptions = {
    // The webhook removes registrations for the eviction protection: off with it.
    enabled: config.BUSY_RUNNER_EVICTION_PROTECTION && config.EVICTION_WEBHOOK_PORT > 0,
    port: config.EVICTION_WEBHOOK_PORT,
    bindAddress: config.EVICTION_WEBHOOK_BIND_ADDRESS,
    certDir: config.EVICTION_WEBHOOK_CERT_DIR,
    reviewTimeoutMs: (config.EVICTION_WEBHOOK_TIMEOUT_SECONDS - 2) * 1000,
    events: config.EVENTS,
    ...(config.EVICTION_WEBHOOK_CERT_SECRET
      ? {
          certificate: {
            namespace: controllerNamespaceOf(config),
            secretName: config.EVICTION_WEBHOOK_CERT_SECRET,
            serviceName: config.EVICTION_WEBHOOK_SERVICE,
            configurationName: config.EVICTION_WEBHOOK_CONFIGURATION,
            validityDays: config.EVICTION_WEBHOOK_CERT_VALIDITY_DAYS,
          },
        }
      : {}),
    ...overrides.evictionWebhook,
  };
  return {
    kube,
    watch,
    ephemeralRunner,
    unregistration,
    actions: overrides.actions ?? {},
    ephemeralRunnerSet,
    autoscalingRunnerSet,
    autoscalingListener,
    secrets,
    evictionWebhook,
  };
}

/** The CA bundle for Azure Key Vault, read once at start; a file that cannot be read stops the start. */
function readCaFile(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(
      `invalid controller configuration:\n  AZURE_KEY_VAULT_CA_FILE: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
    );
  }
}

/**
 * Where the listeners live: the controller's own namespace (POD_NAMESPACE, from the Downward API),
 * else the watched one, else `default` (a controller run outside a cluster).
 */
export function controllerNamespaceOf(config: ControllerConfig): string {
  return config.POD_NAMESPACE || config.WATCH_NAMESPACE || 'default';
}

/**
 * The controller app: the lib modules, configured from the environment, and the extensions. It
 * builds nothing itself; every runtime part is a provider of the module that owns it (see
 * docs/architecture.md for the graph).
 */
@Module({})
export class ControllerAppModule {
  static forRoot(options: ControllerAppOptions): DynamicModule {
    const modules = moduleOptionsFrom(options);
    return {
      module: ControllerAppModule,
      imports: [
        ObservabilityModule.forRoot({ logger: options.logger }),
        KubeModule.forRoot(modules.kube),
        WatchModule.forRoot(modules.watch),
        ActionsModule.forRoot(modules.actions),
        SecretsModule.forRoot(modules.secrets),
        UnregistrationModule.forRoot(modules.unregistration),
        ReconcilersModule.forRoot(modules),
        EvictionWebhookModule.forRoot(modules.evictionWebhook),
        HealthModule,
        ...(options.config.FLEET_PAGE ? [FleetPageModule] : []),
        ...(options.extensions ?? []),
      ],
    };
  }
}
