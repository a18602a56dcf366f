import { ConfigurableModuleBuilder, Global, Inject, Injectable, LoggerService, Module } from '@nestjs/common';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { createLogger, Logger, LoggerOptions } from './logger';

/** Injection token of the app's {@link Logger} (an interface, so it needs a token of its own). */
export const LOGGER = Symbol('aro.logger');
/**
 * The app's metrics registry is provided under prom-client's `Registry` class; this token is an alias
 * of it for code written before the class token.
 */
export const METRICS_REGISTRY = Symbol('aro.metricsRegistry');

export interface ObservabilityModuleOptions extends LoggerOptions {
  /** The logger to use; one is made from `level`/`format`/`destination` otherwise. */
  logger?: Logger;
  /** The registry /metrics serves; a new one per app otherwise, never prom-client's global one. */
  registry?: Registry;
  /** Collect the Node.js process metrics (heap, event loop, GC) into the registry. Default true. */
  processMetrics?: boolean;
}

export const {
  ConfigurableModuleClass: ObservabilityConfigurableModule,
  MODULE_OPTIONS_TOKEN: OBSERVABILITY_MODULE_OPTIONS,
} = new ConfigurableModuleBuilder<ObservabilityModuleOptions>({ moduleName: 'Observability' })
  .setClassMethodName('forRoot')
  .build();

/** Routes Nest's own messages (module init, routes mapped) into the structured log. */
@Injectable()
export class NestLoggerAdapter implements LoggerService {
  private readonly logger: Logger;

  constructor(@Inject(LOGGER) logger: Logger) {
    this.logger = logger.child({ component: 'nest' });
  }

  log(message: unknown, context?: string): void {
    this.logger.debug(String(message), { component: context ?? 'nest' });
  }

  error(message: unknown, trace?: string, context?: string): void {
    this.logger.error(String(message), trace ? new Error(trace) : undefined, {
      component: context ?? 'nest',
    });
  }

  warn(message: unknown, context?: string): void {
    this.logger.warn(String(message), { component: context ?? 'nest' });
  }

  debug(message: unknown, context?: string): void {
    this.logger.debug(String(message), { component: context ?? 'nest' });
  }

  verbose(message: unknown, context?: string): void {
    this.logger.debug(String(message), { component: context ?? 'nest' });
  }
}

function appRegistry(opts: ObservabilityModuleOptions): Registry {
  if (opts.registry) return opts.registry;
  const registry = new Registry();
  if (opts.processMetrics ?? true) collectDefaultMetrics({ register: registry });
  return registry;
}

/**
 * Provides the app's logger (under {@link LOGGER}) and its metrics registry (under prom-client's
 * `Registry`) to every module of the app. Global, so a lib module or an extension injects them
 * without importing anything. The registry belongs to the app: two apps in one process (tests, a
 * sandbox) never see each other's metrics.
 */
@Global()
@Module({
  providers: [
    {
      provide: LOGGER,
      inject: [OBSERVABILITY_MODULE_OPTIONS],
      useFactory: (opts: ObservabilityModuleOptions): Logger => opts.logger ?? createLogger(opts),
    },
    {
      provide: Registry,
      inject: [OBSERVABILITY_MODULE_OPTIONS],
      useFactory: appRegistry,
    },
    { provide: METRICS_REGISTRY, useExisting: Registry },
    NestLoggerAdapter,
  ],
  exports: [LOGGER, Registry, METRICS_REGISTRY, NestLoggerAdapter],
})
export class ObservabilityModule extends ObservabilityConfigurableModule {}
