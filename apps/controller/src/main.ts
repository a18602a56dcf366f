import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { KUBE_MANAGER, Manager } from '@aro/kube';
import { createLogger } from '@aro/observability';
import { ConfigError, loadControllerConfig } from './config';
import { ControllerAppModule } from './controller-app.module';
import { NestLogger } from './nest-logger';

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
  const app = await NestFactory.create(ControllerAppModule.forRoot({ config, logger }), {
    logger: new NestLogger(logger.child({ component: 'nest' })),
  });
  app.enableShutdownHooks();
  await app.listen(config.PROBE_PORT, config.PROBE_BIND_ADDRESS);
  logger.info('Serving /healthz, /readyz and /metrics', { port: config.PROBE_PORT });
  // Started after listen: probes answer while the caches sync and while standing by for the lease.
  await app.get<Manager>(KUBE_MANAGER).start();
  logger.info('Controller manager started', {
    namespace: config.WATCH_NAMESPACE || '(all)',
    leaderElection: config.LEADER_ELECTION,
  });
}

main().catch((err: unknown) => {
  console.error('aro-controller failed to start:', err instanceof Error ? (err.stack ?? err.message) : err);
  process.exit(1);
});
