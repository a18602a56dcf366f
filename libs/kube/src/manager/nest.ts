import {
  type BeforeApplicationShutdown,
  Inject,
  Injectable,
  type OnApplicationBootstrap,
  Optional,
} from '@nestjs/common';
import { Manager } from './manager';

/**
 * When {@link ManagerLifecycle} starts the manager:
 * - `with-app`: in onApplicationBootstrap, and Nest's init waits until the caches have synced;
 * - `background`: in onApplicationBootstrap without waiting, so `app.listen()` serves the probes
 *   during a long sync; the app awaits {@link ManagerLifecycle.started} after listening;
 * - `manual`: never; the caller runs `manager.start()` (tests that arrange state first).
 */
export type ManagerStartMode = 'with-app' | 'background' | 'manual';

/** Injection token of the {@link ManagerStartMode}; `with-app` when not provided. */
export const MANAGER_START_MODE = Symbol('aro.kube.managerStartMode');

/**
 * Ties the Manager to Nest's lifecycle. Controllers register with the manager in their modules'
 * onModuleInit; Nest runs every onModuleInit before any onApplicationBootstrap, so starting here sees
 * them all and their informers start with the cache. Stopping in beforeApplicationShutdown (needs
 * `app.enableShutdownHooks()` for signals) drains reconciles and releases the lease while the HTTP
 * server still answers probes.
 */
@Injectable()
export class ManagerLifecycle implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private starting: Promise<void> | undefined;

  constructor(
    private readonly manager: Manager,
    @Optional() @Inject(MANAGER_START_MODE) private readonly mode: ManagerStartMode = 'with-app',
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (this.mode === 'manual') return;
    this.starting = this.manager.start();
    // Observed at once so that a failed start in the background is not an unhandled rejection; the
    // app sees it through started().
    this.starting.catch(() => undefined);
    if (this.mode === 'with-app') await this.starting;
  }

  /** Resolves once the manager has started (caches synced); rejects with why it could not. */
  started(): Promise<void> {
    return this.starting ?? Promise.reject(new Error('manager: not started by the application'));
  }

  beforeApplicationShutdown(): Promise<void> {
    return this.manager.stop();
  }
}
