import { hostname } from 'node:os';
import { createLogger, type LogFormat, type LogLevel } from '@aro/observability';
import { ConfigError, parseServeAddress } from '../config';
import { startSharedListenerApp, type StartedSharedListener } from './shared-listener-app';

const LEVELS: readonly string[] = ['debug', 'info', 'warn', 'error'];

/**
 * `LISTENER_MODE=shared`: the process serves every scale set whose config is in LISTENER_CONFIG_DIR
 * (read again every LISTENER_RESCAN_SECONDS, default 10), with metrics and probes on
 * LISTENER_METRICS_ADDR (default `:8080`) at LISTENER_METRICS_ENDPOINT (default `/metrics`). Logging:
 * LOG_LEVEL, LOG_FORMAT. SIGTERM stops every listener (each deletes its session) and exits 0.
 */
export async function runShared(env: NodeJS.ProcessEnv): Promise<void> {
  const configDir = env.LISTENER_CONFIG_DIR;
  if (!configDir) throw new ConfigError('LISTENER_MODE=shared needs LISTENER_CONFIG_DIR');
  const rescanSeconds = Number(env.LISTENER_RESCAN_SECONDS ?? '10');
  if (!Number.isFinite(rescanSeconds) || rescanSeconds < 1) {
    throw new ConfigError(`LISTENER_RESCAN_SECONDS: ${env.LISTENER_RESCAN_SECONDS} must be a number >= 1`);
  }
  const level = env.LOG_LEVEL ?? 'info';
  if (!LEVELS.includes(level))
    throw new ConfigError(`LOG_LEVEL: ${level} must be one of ${LEVELS.join(', ')}`);
  const metricsEndpoint = env.LISTENER_METRICS_ENDPOINT || '/metrics';
  if (!metricsEndpoint.startsWith('/')) throw new ConfigError('LISTENER_METRICS_ENDPOINT must start with /');
  const logger = createLogger({
    level: level as LogLevel,
    format: (env.LOG_FORMAT === 'text' ? 'text' : 'json') as LogFormat,
  });
  logger.info('aro-listener starting in shared mode', { node: process.version, pid: process.pid, configDir });
  const running: { app?: StartedSharedListener } = {};
  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info('Shutting down', { signal });
    (running.app ? running.app.close() : Promise.resolve()).then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error('Shutdown failed', err);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  const started = await startSharedListenerApp({
    configDir,
    rescanMs: rescanSeconds * 1000,
    logger,
    serve: parseServeAddress(env.LISTENER_METRICS_ADDR ?? ':8080'),
    metricsEndpoint,
    owner: env.POD_NAME || hostname(),
  });
  running.app = started;
  if (stopping) await started.close().finally(() => process.exit(0));
  logger.info('Listening for jobs', { port: started.port, scaleSets: started.host.keys().length });
}
