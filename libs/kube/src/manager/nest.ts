import {
  type BeforeApplicationShutdown,
  Inject,
  Injectable,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { Manager } from './manager';

/** The injection token under which an app provides its Manager. */
export const KUBE_MANAGER = Symbol('aro.kube.manager');

/**
 * Ties a Manager to Nest's lifecycle. Controllers register with the manager in their modules'
 * onModuleInit; Nest runs every onModuleInit before any onApplicationBootstrap, so starting here sees
 * them all and their informers start with the cache. Stopping in beforeApplicationShutdown (needs
 * `app.enableShutdownHooks()`) drains reconciles and releases the lease while the HTTP server still
 * answers probes.
 *
 * start() resolves once the caches have synced, and Nest's init waits for it: an app that must answer
 * probes during a long sync should call `manager.start()` itself after `app.listen()` instead.
 */
@Injectable()
export class ManagerLifecycle implements OnApplicationBootstrap, BeforeApplicationShutdown {
  constructor(@Inject(KUBE_MANAGER) private readonly manager: Manager) {}

  onApplicationBootstrap(): Promise<void> {
    return this.manager.start();
  }

  beforeApplicationShutdown(): Promise<void> {
    return this.manager.stop();
  }
}
