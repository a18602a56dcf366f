import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { createLogger } from '@aro/observability';
import { startControllerApp } from './bootstrap';
import { ConfigError, loadControllerConfig } from './config';
import { ExtensionError } from './extensions';

async function main(): Promise<void> {
  let config;
  try {
    config = loadControllerConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
  const logger = createLogger({ level: config.LOG_LEVEL, format: config.LOG_FORMAT });
  // The runtime is part of what an operator on call needs to know (the project supports Node 24 only;
  // a scanner or an old base image can say otherwise), so it is the first thing the process says.
  logger.info('aro-controller starting', {
    node: process.version,
    pid: process.pid,
    extensions: config.ARO_EXTENSIONS,
  });
  const { app } = await startControllerApp({ config, logger });
  logger.info('Controller manager started; serving /healthz, /readyz and /metrics', {
    port: (app.getHttpServer().address() as AddressInfo).port,
    namespace: config.WATCH_NAMESPACE || '(all)',
    leaderElection: config.LEADER_ELECTION,
  });
}

main().catch((err: unknown) => {
  // A bad extension is a configuration error, like a bad option: exit 2, not a crash to retry.
  if (err instanceof ExtensionError) {
    console.error(`aro-controller cannot start: ${err.message}`);
    process.exit(2);
  }
  console.error('aro-controller failed to start:', err instanceof Error ? (err.stack ?? err.message) : err);
  process.exit(1);
});
