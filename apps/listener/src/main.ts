import { hostname } from 'node:os';
import { createLogger } from '@aro/observability/lean';
import { startListenerApp, StartedListener } from './bootstrap';
import { ConfigError, LoadedListenerConfig, loadListenerConfig } from './config';
import { shutdownOnSignals } from './shutdown';

/**
 * The listener process (`aro-listener`): reads LISTENER_CONFIG_PATH, runs until SIGTERM/SIGINT, then
 * stops the loop and deletes its message session before exiting 0. A bad config exits 2 with a
 * message naming the field; anything else that stops it exits 1, and the AutoscalingListener
 * controller makes a new pod.
 */
async function main(): Promise<void> {
  let config: LoadedListenerConfig;
  try {
    config = loadListenerConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
  const logger = createLogger({ level: config.logLevel, format: config.logFormat });
  logger.info('aro-listener starting', {
    node: process.version,
    pid: process.pid,
    scaleSet: config.scaleSetName,
    scaleSetId: config.scaleSetId,
    ephemeralRunnerSet: `${config.ephemeralRunnerSetNamespace}/${config.ephemeralRunnerSetName}`,
    minRunners: config.minRunners,
    maxRunners: config.maxRunners,
  });
  const running: { listener?: StartedListener } = {};
  const signals = shutdownOnSignals(logger, () => running.listener);
  const started = await startListenerApp({
    config,
    logger,
    // In the pod the hostname is the pod name; POD_NAME (downward API) says so where it is not.
    owner: process.env.POD_NAME || hostname(),
    onLoopExit: (err) => {
      logger.error('The poll loop stopped by itself; exiting so that a new pod takes over', err);
      void (running.listener?.close() ?? Promise.resolve()).finally(() => process.exit(1));
    },
  });
  running.listener = started;
  if (signals.stopping()) await started.close().finally(() => process.exit(0));
  logger.info('Listening for jobs', { port: started.port, metricsEndpoint: config.metricsEndpoint });
}

/**
 * LISTENER_MODE=shared serves many scale sets (shared/run-shared.ts); one per process otherwise. The
 * shared mode is a Nest app: it is loaded only when asked for, so that a listener pod never loads Nest
 * (docs/performance.md, "The listener").
 */
async function runShared(): Promise<void> {
  await import('reflect-metadata');
  const shared = await import('./shared/run-shared');
  return shared.runShared(process.env);
}

function run(): Promise<void> {
  if (process.env.LISTENER_MODE !== 'shared') return main();
  return runShared().catch((err: unknown) => {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  });
}

run().catch((err: unknown) => {
  console.error('aro-listener failed to start:', err instanceof Error ? (err.stack ?? err.message) : err);
  process.exit(1);
});
