import type { AddressInfo } from 'node:net';
import type { INestApplication, ModuleMetadata } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { KubeConfig } from '@kubernetes/client-node';
import { KUBE_MANAGER, Manager } from '@aro/kube';
import { ControllerConfig, loadControllerConfig } from '../../../apps/controller/src/config';
import { ControllerAppModule } from '../../../apps/controller/src/controller-app.module';
import { NestLogger } from '../../../apps/controller/src/nest-logger';
import { testKubeConfig } from '../../harness';
import { testLogger } from '../ephemeral-runner/fixture';

export interface BootedApp {
  app: INestApplication;
  manager: Manager;
  url: string;
  config: ControllerConfig;
  get(path: string): Promise<{ status: number; body: string }>;
  close(): Promise<void>;
}

/** Boots the controller app as main.ts does, on a free port, against the test control plane. */
export async function bootControllerApp(
  env: Record<string, string>,
  opts: {
    imports?: ModuleMetadata['imports'];
    kubeConfig?: KubeConfig;
    onLeadershipLost?: (m: Manager) => void;
  } = {},
): Promise<BootedApp> {
  const config = loadControllerConfig({ PROBE_PORT: '0', PROBE_BIND_ADDRESS: '127.0.0.1', ...env });
  const logger = testLogger();
  const app = await NestFactory.create(
    ControllerAppModule.forRoot({
      config,
      logger,
      kubeConfig: opts.kubeConfig ?? testKubeConfig(),
      imports: opts.imports,
      onLeadershipLost: opts.onLeadershipLost ?? (() => undefined),
    }),
    { logger: new NestLogger(logger) },
  );
  await app.listen(0, '127.0.0.1');
  const port = (app.getHttpServer().address() as AddressInfo).port;
  const manager = app.get<Manager>(KUBE_MANAGER);
  await manager.start();
  const url = `http://127.0.0.1:${port}`;
  return {
    app,
    manager,
    url,
    config,
    async get(path) {
      const res = await fetch(url + path);
      return { status: res.status, body: await res.text() };
    },
    close: () => app.close(),
  };
}
