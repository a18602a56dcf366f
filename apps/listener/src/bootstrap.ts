import type { AddressInfo } from 'node:net';
import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { NestLoggerAdapter } from '@aro/observability';
import { ListenerAppModule, ListenerAppOptions } from './listener-app.module';
import { ScaleSetListener } from './scale-set-listener';

export interface StartedListener {
  app: INestApplicationContext;
  listener: ScaleSetListener;
  registry: Registry;
  /** The port /metrics, /healthz and /readyz are served on; undefined when metrics_addr disables it. */
  port?: number;
  close(): Promise<void>;
}

/**
 * Creates the listener app, serves metrics and probes on `metrics_addr` (unless it is empty or `0`),
 * then starts the poll loop. main.ts runs it as the process; tests run it in-process.
 */
export async function startListenerApp(options: ListenerAppOptions): Promise<StartedListener> {
  const { config, logger } = options;
  // A registry of the listener's own: /metrics shows the gha_* metrics, the listener's, its Actions
  // client's and the process's, and two listeners in one process (tests) do not collide.
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const module = ListenerAppModule.forRoot(options, registry);
  // The same adapter the controller uses; made here because Nest logs before its injector exists.
  const nestLogger = new NestLoggerAdapter(logger);
  let app: INestApplicationContext;
  let port: number | undefined;
  if (config.serve) {
    const http = await NestFactory.create<NestExpressApplication>(module, { logger: nestLogger });
    http.getHttpAdapter().get(config.metricsEndpoint, (_req: unknown, res: MetricsResponse) => {
      registry.metrics().then(
        (body) => res.setHeader('Content-Type', registry.contentType).status(200).send(body),
        (err: unknown) => res.status(500).send(String(err)),
      );
    });
    await http.listen(config.serve.port, config.serve.host);
    port = (http.getHttpServer().address() as AddressInfo).port;
    app = http;
  } else {
    app = await NestFactory.createApplicationContext(module, { logger: nestLogger });
  }
  const listener = app.get(ScaleSetListener);
  listener.start();
  return { app, listener, registry, port, close: () => app.close() };
}

interface MetricsResponse {
  setHeader(name: string, value: string): MetricsResponse;
  status(code: number): MetricsResponse;
  send(body: string): void;
}
