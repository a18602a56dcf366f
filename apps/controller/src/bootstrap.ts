import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { KUBE_MANAGER, Manager } from '@aro/kube';
import { ControllerAppModule, ControllerAppOptions } from './controller-app.module';
import { NestLogger } from './nest-logger';

/**
 * Creates the controller app, serves its probes and metrics, then starts the manager. The manager
 * starts after listen, so the probes answer while the caches sync and while standing by for the lease.
 * main.ts runs it as the process; tests run it in-process with their own options.
 */
export async function startControllerApp(
  options: ControllerAppOptions,
): Promise<{ app: INestApplication; manager: Manager }> {
  const { config, logger } = options;
  const app = await NestFactory.create(ControllerAppModule.forRoot(options), {
    logger: new NestLogger(logger.child({ component: 'nest' })),
  });
  app.enableShutdownHooks();
  await app.listen(config.PROBE_PORT, config.PROBE_BIND_ADDRESS);
  const manager = app.get<Manager>(KUBE_MANAGER);
  await manager.start();
  return { app, manager };
}
