import { createServer, connect, type Server, type Socket } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import {
  ConfigMapKind,
  InformerCache,
  KubeClient,
  Manager,
  type LeaderElectionOptions,
  type ManagerOptions,
} from '@aro/kube';
import { createLogger, type Logger } from '@aro/observability';
import { Registry } from 'prom-client';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { testKubeConfig } from '../../harness';

/** Set ARO_TEST_LOG=debug to watch the runtime at work while a test runs. */
export function testLogger(): Logger {
  const level = (process.env.ARO_TEST_LOG as 'debug' | 'info' | undefined) ?? 'silent';
  return createLogger({ level, format: 'text' });
}

/**
 * A TCP pass-through to the API server that a test can cut, the way a network partition cuts one
 * replica off while the others carry on. TLS is end to end, so the client still verifies the server.
 */
export class CuttableProxy {
  private readonly sockets = new Set<Socket>();
  private server: Server | undefined;
  private port = 0;

  constructor(private readonly target: URL) {}

  async start(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(Number(this.target.port || 443), this.target.hostname);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.server = server;
    this.port = (server.address() as { port: number }).port;
  }

  /** A kubeconfig like `base` whose server is this proxy. */
  kubeConfig(base: KubeConfig): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: base.clusters.map((c) => ({ ...c, server: `https://127.0.0.1:${this.port}` })),
      users: base.users,
      contexts: base.contexts,
      currentContext: base.currentContext,
    });
    return kc;
  }

  /** Drops every open connection and refuses new ones. */
  cut(): void {
    this.server?.close();
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
  }
}

export interface Runtime {
  manager: Manager;
  client: KubeClient;
  registry: Registry;
  lost: number;
  stop(): Promise<void>;
}

/** A manager with its own client, cache and registry, as one replica of the controller would have. */
export function newRuntime(
  kubeConfig: KubeConfig,
  namespace: string,
  leaderElection: LeaderElectionOptions | false,
  overrides: Partial<ManagerOptions> = {},
): Runtime {
  const registry = new Registry();
  const logger = testLogger();
  const client = new KubeClient(kubeConfig, { logger, requestTimeoutMs: 5_000 });
  const cache = new InformerCache(client, {
    namespace,
    logger,
    registry,
    backoff: { initialMs: 100, maxMs: 1_000 },
  });
  const runtime: Runtime = {
    manager: undefined!,
    client,
    registry,
    lost: 0,
    async stop() {
      await runtime.manager.stop();
      client.close();
    },
  };
  runtime.manager = new Manager({
    client,
    cache,
    logger,
    registry,
    leaderElection,
    gracefulShutdownTimeoutMs: 10_000,
    onLeadershipLost: () => runtime.lost++,
    ...overrides,
  });
  return runtime;
}

export function apiServerUrl(): URL {
  const server = testKubeConfig().getCurrentCluster()?.server;
  if (!server) throw new Error('the test kubeconfig names no API server');
  return new URL(server);
}

export function adminClient(): KubeClient {
  return new KubeClient(testKubeConfig(), { logger: testLogger(), requestTimeoutMs: 10_000 });
}

export async function createConfigMap(
  client: KubeClient,
  namespace: string,
  name: string,
  extra: Partial<V1ConfigMap> = {},
): Promise<V1ConfigMap> {
  return client.create<V1ConfigMap>(ConfigMapKind, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { namespace, name, ...extra.metadata },
    data: extra.data ?? { created: 'by-test' },
  });
}

/** The value of a counter or gauge series in a registry, 0 when the series does not exist. */
export async function metricValue(
  registry: Registry,
  name: string,
  labels: Record<string, string>,
): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (metric === undefined) return 0;
  const data = await metric.get();
  const series = data.values.find((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val));
  return series?.value ?? 0;
}
