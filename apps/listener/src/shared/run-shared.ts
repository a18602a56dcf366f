import { hostname } from 'node:os';
import { createLogger, parseLogLevel, type LogFormat } from '@aro/observability';
import { shutdownOnSignals } from '../shutdown';
import { ConfigError, parseServeAddress } from '../config';
import { parseSecretRef } from './config-secret';
import { startSharedListenerApp, type StartedSharedListener } from './shared-listener-app';

/**
 * `LISTENER_MODE=shared`: the process serves every scale set whose config is in LISTENER_CONFIG_SECRET
 * (`<namespace>/<name>`, the Secret the AutoscalingListener controller keeps) or LISTENER_CONFIG_DIR
 * (read again every LISTENER_RESCAN_SECONDS, default 10), with metrics and probes on
 * LISTENER_METRICS_ADDR (default `:8080`) at LISTENER_METRICS_ENDPOINT (default `/metrics`). Logging:
 * LOG_LEVEL, LOG_FORMAT. SIGTERM stops every listener (each deletes its session) and exits 0.
 */
export async function runShared(env: NodeJS.ProcessEnv): Promise<void> {
  const configDir = env.LISTENER_CONFIG_DIR || undefined;
  const secretRef = env.LISTENER_CONFIG_SECRET || undefined;
  if (!configDir === !secretRef) {
    throw new ConfigError('LISTENER_MODE=shared needs one of LISTENER_CONFIG_SECRET or LISTENER_CONFIG_DIR');
  }
  const configSecret = secretRef ? parseSecretRef(secretRef) : undefined;
  if (secretRef && !configSecret) {
    throw new ConfigError(`LISTENER_CONFIG_SECRET: ${secretRef} must be <namespace>/<name>`);
  }
  const rescanSeconds = Number(env.LISTENER_RESCAN_SECONDS ?? '10');
  if (!Number.isFinite(rescanSeconds) || rescanSeconds < 1) {
    throw new ConfigError(`LISTENER_RESCAN_SECONDS: ${env.LISTENER_RESCAN_SECONDS} must be a number >= 1`);
  }
  // Upstream's numeric levels as well as names, as the controller and the per-pod listener's chart take them.
  const level = parseLogLevel(env.LOG_LEVEL ?? 'info');
  if (level === undefined) {
    throw new ConfigError(
      `LOG_LEVEL: ${env.LOG_LEVEL} must be debug, info, warn, error or upstream's number (-1 to 2)`,
    );
  }
  const metricsEndpoint = env.LISTENER_METRICS_ENDPOINT || '/metrics';
  if (!metricsEndpoint.startsWith('/')) throw new ConfigError('LISTENER_METRICS_ENDPOINT must start with /');
  const logger = createLogger({
    level,
    format: (env.LOG_FORMAT === 'text' ? 'text' : 'json') as LogFormat,
  });
  logger.info('aro-listener starting in shared mode', {
    node: process.version,
    pid: process.pid,
    configDir,
    configSecret: secretRef,
  });
  const running: { app?: StartedSharedListener } = {};
  const signals = shutdownOnSignals(logger, () => running.app);
  const started = await startSharedListenerApp({
    configDir,
    configSecret,
    rescanMs: rescanSeconds * 1000,
    logger,
    serve: parseServeAddress(env.LISTENER_METRICS_ADDR ?? ':8080'),
    metricsEndpoint,
    owner: env.POD_NAME || hostname(),
  });
  running.app = started;
  if (signals.stopping()) await started.close().finally(() => process.exit(0));
  logger.info('Listening for jobs', { port: started.port, scaleSets: started.host.keys().length });
}
