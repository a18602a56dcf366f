import {
  ConfigurableModuleBuilder,
  Global,
  Injectable,
  Module,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { Registry } from 'prom-client';
import { LOGGER, type Logger } from '@aro/observability';
import { InformerCache } from './cache';
import { KubeClient } from './client';
import { IssuedDeletions } from './controllerutil/issued-deletions';
import { type KubeConfigSource, loadKubeConfigSource } from './client/kubeconfig';
import type { LeaderElectionOptions } from './leaderelection';
import { Manager } from './manager/manager';
import { MANAGER_START_MODE, ManagerLifecycle, type ManagerStartMode } from './manager/nest';
import type { Clock } from './queue';

export interface KubeModuleOptions {
  /** A kubeconfig already loaded (tests); otherwise `kubeconfigPath`, then in-cluster or ~/.kube/config. */
  kubeConfig?: KubeConfigSource;
  kubeconfigPath?: string;
  /** User-Agent and field manager of every request the app makes. */
  userAgent?: string;
  fieldManager?: string;
  /** Lease leader election; false runs leader-only work at once (one replica, tests). */
  leaderElection: LeaderElectionOptions | false;
  /** How long stopping lets in-flight work finish. Default 30 s. */
  gracefulShutdownTimeoutMs?: number;
  /** When the manager starts; see {@link ManagerStartMode}. Default `with-app`. */
  start?: ManagerStartMode;
  /** Called instead of exiting when leadership is lost (tests). */
  onLeadershipLost?: (manager: Manager) => void;
  /** Time as the manager, its controllers and the leader elector see it (tests). */
  clock?: Clock;
}

export const { ConfigurableModuleClass: KubeConfigurableModule, MODULE_OPTIONS_TOKEN: KUBE_MODULE_OPTIONS } =
  new ConfigurableModuleBuilder<KubeModuleOptions>({ moduleName: 'Kube' })
    .setClassMethodName('forRoot')
    .build();

/** Read without client-node where it can be (see kubeconfig.ts): it holds ~30 MiB the app never uses. */
async function loadKubeConfig(opts: KubeModuleOptions): Promise<KubeConfigSource> {
  return opts.kubeConfig ?? loadKubeConfigSource(opts.kubeconfigPath);
}

/** Releases the client's keep-alive sockets once the manager (stopped before) no longer uses them. */
@Injectable()
class KubeClientCloser implements OnApplicationShutdown {
  constructor(private readonly client: KubeClient) {}

  onApplicationShutdown(): void {
    this.client.close();
  }
}

/**
 * The Kubernetes runtime of an app: {@link KubeClient} (uncached reads and every write), the
 * {@link Manager} that runs controllers and workers under lease leader election over the watcher's
 * {@link InformerCache} (WatchModule, which the app imports beside this one), and
 * {@link ManagerLifecycle}, which starts and stops the manager with the app. Global, so controller
 * modules and extensions inject these classes directly.
 *
 * A controller module registers with the manager in its onModuleInit (ControllerBuilder(...)
 * .complete() or manager.add()); the lifecycle starts the manager afterwards, in
 * onApplicationBootstrap, so every controller's informers start with the cache.
 */
@Global()
@Module({
  providers: [
    {
      provide: KubeClient,
      inject: [KUBE_MODULE_OPTIONS, LOGGER, Registry],
      useFactory: async (opts: KubeModuleOptions, logger: Logger, registry: Registry) =>
        new KubeClient(await loadKubeConfig(opts), {
          userAgent: opts.userAgent,
          fieldManager: opts.fieldManager,
          logger,
          registry,
        }),
    },
    {
      provide: Manager,
      inject: [KUBE_MODULE_OPTIONS, KubeClient, InformerCache, LOGGER, Registry],
      useFactory: (
        opts: KubeModuleOptions,
        client: KubeClient,
        cache: InformerCache,
        logger: Logger,
        registry: Registry,
      ) =>
        new Manager({
          client,
          cache,
          logger,
          registry,
          leaderElection: opts.leaderElection,
          gracefulShutdownTimeoutMs: opts.gracefulShutdownTimeoutMs,
          onLeadershipLost: opts.onLeadershipLost,
          clock: opts.clock,
        }),
    },
    {
      provide: MANAGER_START_MODE,
      inject: [KUBE_MODULE_OPTIONS],
      useFactory: (opts: KubeModuleOptions): ManagerStartMode => opts.start ?? 'with-app',
    },
    ManagerLifecycle,
    KubeClientCloser,
    // One per app: the controllers that may delete the same object skip each other's deletions.
    { provide: IssuedDeletions, useFactory: () => new IssuedDeletions() },
  ],
  exports: [KubeClient, Manager, ManagerLifecycle, IssuedDeletions],
})
export class KubeModule extends KubeConfigurableModule {}
