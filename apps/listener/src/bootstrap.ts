import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { NestLoggerAdapter } from '@aro/observability';
import { ListenerAppModule, ListenerAppOptions } from './listener-app.module';
import { ProbeServer } from './probe-server';
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
 * Creates the listener app (a Nest application context: no HTTP framework), serves metrics and
 * probes on `metrics_addr` (unless it is empty or `0`), then starts the poll loop. main.ts runs it as
 * the process; tests run it in-process.
 */
export async function startListenerApp(options: ListenerAppOptions): Promise<StartedListener> {
  const { config, logger } = options;
  // A registry of the listener's own: /metrics shows the gha_* metrics, the listener's, its Actions
  // client's and the process's, and two listeners in one process (tests) do not collide.
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // The same adapter the controller uses; made here because Nest logs before its injector exists.
  const app = await NestFactory.createApplicationContext(ListenerAppModule.forRoot(options, registry), {
    logger: new NestLoggerAdapter(logger),
  });
  const listener = app.get(ScaleSetListener);
  const probes = new ProbeServer({
    registry,
    metricsEndpoint: config.metricsEndpoint,
    logger,
    probes: {
      liveness: () => {
        const h = listener.health();
        return {
          up: h.healthy,
          details: h.healthy ? { sinceLastCycleMs: h.sinceLastCycleMs } : { reason: h.reason },
        };
      },
      readiness: () => {
        const state = listener.session.state;
        return listener.isReady()
          ? { up: true, details: { state } }
          : { up: false, details: { state, reason: 'no message session is open' } };
      },
    },
  });
  let port: number | undefined;
  try {
    if (config.serve) port = await probes.listen(config.serve);
  } catch (err) {
    await app.close();
    throw err;
  }
  listener.start();
  // The listener stops first (its session is deleted while the probes still answer), then the server.
  const close = async (): Promise<void> => {
    await app.close();
    await probes.close();
  };
  return { app, listener, registry, port, close };
}
