import type { Clock, KubeConfigSource } from '@aro/kube/lean';
import { collectProcessMetrics, Registry, type Logger } from '@aro/observability/lean';
import type { LoadedListenerConfig } from './config';
import { loadListenerKubeConfig } from './kube-config';
import { ProbeServer } from './probe-server';
import { ScaleSetListener, type ScaleSetListenerOptions } from './scale-set-listener';
import type { ListenerTuning } from './tuning';

export interface ListenerAppOptions {
  config: LoadedListenerConfig;
  logger: Logger;
  /** A kubeconfig to use instead of KUBECONFIG / in-cluster (tests). */
  kubeConfig?: KubeConfigSource;
  tuning?: Partial<ListenerTuning>;
  owner?: string;
  clock?: Clock;
  onLoopExit?: ScaleSetListenerOptions['onLoopExit'];
}

export interface StartedListener {
  listener: ScaleSetListener;
  registry: Registry;
  /** The port /metrics, /healthz and /readyz are served on; undefined when metrics_addr disables it. */
  port?: number;
  close(): Promise<void>;
}

/**
 * Starts one scale set's listener (the default, per-pod mode): its registry, kubeconfig and
 * ScaleSetListener composed by hand, metrics and probes on `metrics_addr` (unless it is empty or `0`),
 * then the poll loop. No Nest here on purpose: a listener pod needs an HTTP client, a session, merge
 * patches and /metrics, and Nest's injector (with rxjs) cost each pod RSS and start time for a few
 * objects built once (docs/performance.md, "The listener"). Every `@aro/*` import on this path is a
 * lib's `lean` entry for the same reason. main.ts runs it as the process; tests run it in-process.
 */
export async function startListenerApp(options: ListenerAppOptions): Promise<StartedListener> {
  const { config, logger } = options;
  // A registry of the listener's own: /metrics shows the gha_* metrics, the listener's, its Actions
  // client's and the process's, and two listeners in one process (tests) do not collide.
  const registry = new Registry();
  collectProcessMetrics(registry);
  const kubeConfig = options.kubeConfig ?? (await loadListenerKubeConfig());
  const listener = new ScaleSetListener({
    config,
    logger,
    registry,
    kubeConfig,
    tuning: options.tuning,
    owner: options.owner,
    clock: options.clock,
    onLoopExit: options.onLoopExit,
  });
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
    await listener.stop();
    throw err;
  }
  listener.start();
  // The listener stops first (loop, bookkeeping, its session deleted while the probes still answer),
  // then the server; a second close (a signal during an exit) waits for the first.
  let closed: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closed ??= (async () => {
      await listener.stop();
      await probes.close();
    })());
  return { listener, registry, port, close };
}
