import { DynamicModule, Module } from '@nestjs/common';
import { LOGGER, Logger, METRICS_REGISTRY } from '@aro/observability';
import { Registry } from 'prom-client';
import { MultiClient, MultiClientOptions } from './multi-client';

export type ActionsModuleOptions = Omit<MultiClientOptions, 'logger' | 'registry' | 'now'>;

/**
 * Provides the process-wide MultiClient, with the logger and metrics registry of the
 * ObservabilityModule (which must be imported by the app).
 */
@Module({})
export class ActionsModule {
  static forRoot(opts: ActionsModuleOptions = {}): DynamicModule {
    return {
      module: ActionsModule,
      providers: [
        {
          provide: MultiClient,
          inject: [LOGGER, METRICS_REGISTRY],
          useFactory: (logger: Logger, registry: Registry) => new MultiClient({ ...opts, logger, registry }),
        },
      ],
      exports: [MultiClient],
    };
  }
}
