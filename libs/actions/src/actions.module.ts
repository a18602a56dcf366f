import { ConfigurableModuleBuilder, Global, Injectable, Module, OnApplicationShutdown } from '@nestjs/common';
import { Registry } from 'prom-client';
import { LOGGER, Logger } from '@aro/observability';
import { MultiClient, MultiClientOptions } from './multi-client';

export type ActionsModuleOptions = Omit<MultiClientOptions, 'logger' | 'registry' | 'now'>;

export const {
  ConfigurableModuleClass: ActionsConfigurableModule,
  MODULE_OPTIONS_TOKEN: ACTIONS_MODULE_OPTIONS,
} = new ConfigurableModuleBuilder<ActionsModuleOptions>({ moduleName: 'Actions' })
  .setClassMethodName('forRoot')
  .build();

/** Closes every Actions client's connections once the app has stopped using them. */
@Injectable()
class ActionsClientsCloser implements OnApplicationShutdown {
  constructor(private readonly clients: MultiClient) {}

  onApplicationShutdown(): Promise<void> {
    return this.clients.close();
  }
}

/**
 * Provides the process-wide Actions client cache, {@link MultiClient} (one client per GitHub
 * configuration and credentials), with the app's logger and metrics registry. Global: every
 * controller and extension injects `MultiClient` without importing this module.
 */
@Global()
@Module({
  providers: [
    {
      provide: MultiClient,
      inject: [ACTIONS_MODULE_OPTIONS, LOGGER, Registry],
      useFactory: (opts: ActionsModuleOptions, logger: Logger, registry: Registry) =>
        new MultiClient({ ...opts, logger: logger.child({ component: 'actions' }), registry }),
    },
    ActionsClientsCloser,
  ],
  exports: [MultiClient],
})
export class ActionsModule extends ActionsConfigurableModule {}
