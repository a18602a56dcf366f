import type { Logger } from '@aro/observability/lean';

/** What a listener process closes on its way out: one scale set's listener, or the shared host. */
export interface Closeable {
  close(): Promise<void>;
}

/**
 * SIGTERM and SIGINT close what is running (each listener deletes its message session, so the next
 * process is not refused with a 409 for the service's session timeout) and exit 0; a close that fails
 * exits 1. `current()` is read at the signal: a signal during start-up finds nothing yet, and the caller
 * closes what it then starts (`stopping()` says so). Both entry points (one scale set, shared) use it.
 */
export function shutdownOnSignals(
  logger: Logger,
  current: () => Closeable | undefined,
): { stopping: () => boolean } {
  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info('Shutting down', { signal });
    (current()?.close() ?? Promise.resolve()).then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error('Shutdown failed', err);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  return { stopping: () => stopping };
}
