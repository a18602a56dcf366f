import type { LoggerService } from '@nestjs/common';
import type { Logger } from '@aro/observability';

/** Routes Nest's own messages (module init, routes mapped) into the structured log. */
export class NestLogger implements LoggerService {
  constructor(private readonly logger: Logger) {}

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
