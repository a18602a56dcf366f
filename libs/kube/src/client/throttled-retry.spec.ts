import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { KubeApiError } from './errors';
import { ConfigMapKind } from './kinds';
import { KubeClient } from './kube-client';

/**
 * An apiserver shedding load (API priority and fairness): the first `refusals` requests get 429 with a
 * plain-text body and `Retry-After`, as kube-apiserver's tooManyRequests writes them; then 200.
 */
class SheddingServer {
  readonly arrivals: number[] = [];
  private readonly server = http.createServer((req, res) => {
    this.arrivals.push(Date.now());
    req.resume();
    req.on('end', () => {
      if (this.arrivals.length <= this.refusals) {
        res.writeHead(429, {
          'Content-Type': 'text/plain',
          ...(this.retryAfter ? { 'Retry-After': this.retryAfter } : {}),
        });
        res.end('Too many requests, please try again later.\n');
        return;
      }
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(
        JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'ns' } }),
      );
    });
  });

  constructor(
    private readonly refusals: number,
    private readonly retryAfter: string | undefined,
  ) {}

  async client(opts: { maxThrottledRetries?: number } = {}): Promise<KubeClient> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const kc = new KubeConfig();
    kc.loadFromClusterAndUser(
      {
        name: 'shedding',
        server: `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`,
        skipTLSVerify: true,
      },
      { name: 'u' },
    );
    return new KubeClient(kc, { requestTimeoutMs: 5_000, registry: new Registry(), ...opts });
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

describe('KubeClient on a 429 with Retry-After', () => {
  let server: SheddingServer | undefined;
  let client: KubeClient | undefined;
  afterEach(async () => {
    client?.close();
    await server?.close();
  });

  it('sends the request again only once the wait the server asked for has passed', async () => {
    server = new SheddingServer(2, '1');
    client = await server.client();
    const cm = await client.get(ConfigMapKind, 'ns', 'c');
    expect(cm.metadata?.name).toBe('c');
    const gaps = server.arrivals.slice(1).map((t, i) => t - server!.arrivals[i]);
    expect(gaps).toHaveLength(2);
    // Timers may fire a little early by the wall clock; never a whole tenth of the wait.
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(900);
  });

  it("holds back another caller's request for the same object until the wait is over", async () => {
    server = new SheddingServer(1, '1');
    client = await server.client();
    const first = client.get(ConfigMapKind, 'ns', 'c');
    await new Promise((resolve) => setTimeout(resolve, 200));
    const second = client.get(ConfigMapKind, 'ns', 'c');
    await Promise.all([first, second]);
    expect(server.arrivals).toHaveLength(3);
    for (const later of server.arrivals.slice(1))
      expect(later - server.arrivals[0]).toBeGreaterThanOrEqual(900);
  });

  it('writes too: a refused write was not served, so it is sent again', async () => {
    server = new SheddingServer(1, '1');
    client = await server.client();
    const created = await client.create(ConfigMapKind, { metadata: { name: 'c', namespace: 'ns' } });
    expect(created.metadata?.name).toBe('c');
    expect(server.arrivals).toHaveLength(2);
    expect(server.arrivals[1] - server.arrivals[0]).toBeGreaterThanOrEqual(900);
  });

  it('gives up after maxThrottledRetries and says in the error how long the server asked to wait', async () => {
    server = new SheddingServer(10, '1');
    client = await server.client({ maxThrottledRetries: 1 });
    const err = await client.get(ConfigMapKind, 'ns', 'c').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect((err as KubeApiError).statusCode).toBe(429);
    expect((err as KubeApiError).retryAfterSeconds).toBe(1);
    expect(server.arrivals).toHaveLength(2);
  });

  it('does not retry a 429 that names no wait (the Eviction API refusing for a disruption budget)', async () => {
    server = new SheddingServer(1, undefined);
    client = await server.client();
    const err = await client.get(ConfigMapKind, 'ns', 'c').catch((e: unknown) => e);
    expect((err as KubeApiError).statusCode).toBe(429);
    expect(server.arrivals).toHaveLength(1);
  });
});
