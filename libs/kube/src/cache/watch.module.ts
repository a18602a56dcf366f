import { ConfigurableModuleBuilder, Global, Module } from '@nestjs/common';
import { Registry } from 'prom-client';
import { LOGGER, type Logger } from '@aro/observability';
import { KubeClient } from '../client';
import { InformerCache } from './informer-cache';

export interface WatchModuleOptions {
  /** Namespace the informer cache watches; '' or undefined for all. */
  namespace?: string;
  /** More namespaces the cache watches beside `namespace` (the controller's own); ignored when all. */
  extraNamespaces?: readonly string[];
}

export const {
  ConfigurableModuleClass: WatchConfigurableModule,
  MODULE_OPTIONS_TOKEN: WATCH_MODULE_OPTIONS,
} = new ConfigurableModuleBuilder<WatchModuleOptions>({ moduleName: 'Watch' })
  .setClassMethodName('forRoot')
  .build();

/**
 * The watcher: the {@link InformerCache} the controllers read through, one informer per kind they
 * watch, started by the manager with the controllers. Apart from KubeModule's client, which writes and
 * reads uncached: a reader of the cache depends on this module, a writer on the client. Global, so
 * controller modules and extensions inject InformerCache directly.
 */
@Global()
@Module({
  providers: [
    {
      provide: InformerCache,
      inject: [WATCH_MODULE_OPTIONS, KubeClient, LOGGER, Registry],
      useFactory: (opts: WatchModuleOptions, client: KubeClient, logger: Logger, registry: Registry) =>
        new InformerCache(client, {
          namespace: opts.namespace || undefined,
          extraNamespaces: opts.extraNamespaces,
          logger: logger.child({ component: 'cache' }),
          registry,
        }),
    },
  ],
  exports: [InformerCache],
})
export class WatchModule extends WatchConfigurableModule {}
