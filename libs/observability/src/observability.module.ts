import { DynamicModule, Global, Module } from '@nestjs/common';
import { Registry } from 'prom-client';
import { createLogger, Logger, LoggerOptions } from './logger';
import { metricsRegistry } from './metrics';

export const LOGGER = Symbol('aro.logger');
export const METRICS_REGISTRY = Symbol('aro.metricsRegistry');

/** Provides the process logger and metrics registry to every module under the app. */
@Global()
@Module({})
export class ObservabilityModule {
  static forRoot(opts: LoggerOptions & { logger?: Logger; registry?: Registry } = {}): DynamicModule {
    const logger = opts.logger ?? createLogger(opts);
    return {
      module: ObservabilityModule,
      providers: [
        { provide: LOGGER, useValue: logger },
        { provide: METRICS_REGISTRY, useValue: opts.registry ?? metricsRegistry() },
      ],
      exports: [LOGGER, METRICS_REGISTRY],
    };
  }
}
