import { createHash } from 'node:crypto';
import { createLogger, Logger, metricsRegistry } from '@aro/observability/lean';
import { Registry } from 'prom-client';
import { GitHubCredentials } from './auth';
import { ActionsServiceClient } from './client';
import { ProxySettings } from './dispatchers';
import { RetryOptions } from './retry';

export interface MultiClientOptions {
  logger?: Logger;
  registry?: Registry;
  userAgent?: string;
  requestTimeoutMs?: number;
  retry?: RetryOptions;
  /** A client not handed out for this long is dropped and its connections closed. Default 30 min. */
  idleTimeoutMs?: number;
  now?: () => number;
}

export interface ClientForOptions {
  configUrl: string;
  namespace: string;
  credentials: GitHubCredentials;
  proxy?: ProxySettings;
  rootCAs?: string[];
}

interface Entry {
  client: ActionsServiceClient;
  lastUsedMs: number;
}

/**
 * The clients of every scale set the controller manages. One client per (config URL, namespace,
 * credentials, proxy, CA): every runner of a scale set, and every reconcile, shares its connection
 * pool and admin token, so the controller does not exchange credentials on each reconcile.
 * Rotated credentials make a different key, so the next call gets a fresh client that authenticates
 * with them; the old one is closed once nothing has asked for it for the idle timeout.
 */
export class MultiClient {
  private readonly clients = new Map<string, Entry>();
  private readonly logger: Logger;
  private readonly registry: Registry;
  private readonly idleTimeoutMs: number;
  private readonly now: () => number;

  constructor(private readonly opts: MultiClientOptions = {}) {
    this.logger = (opts.logger ?? createLogger()).child({ component: 'actions-multiclient' });
    this.registry = opts.registry ?? metricsRegistry();
    this.idleTimeoutMs = opts.idleTimeoutMs ?? 30 * 60_000;
    this.now = opts.now ?? Date.now;
  }

  getClientFor(o: ClientForOptions): ActionsServiceClient {
    if (!o.namespace) throw new Error(`an Actions client for ${o.configUrl} needs the namespace it serves`);
    const now = this.now();
    this.evictIdle(now);
    const key = clientKey(o);
    const hit = this.clients.get(key);
    if (hit) {
      hit.lastUsedMs = now;
      return hit.client;
    }
    const client = new ActionsServiceClient({
      configUrl: o.configUrl,
      credentials: o.credentials,
      proxy: o.proxy,
      rootCAs: o.rootCAs,
      userAgent: this.opts.userAgent,
      requestTimeoutMs: this.opts.requestTimeoutMs,
      retry: this.opts.retry,
      logger: this.logger,
      registry: this.registry,
    });
    this.clients.set(key, { client, lastUsedMs: now });
    this.logger.debug('Created an Actions client', {
      configUrl: o.configUrl,
      namespace: o.namespace,
      credentials: o.credentials.kind,
      proxied: !!o.proxy,
      extraRootCAs: o.rootCAs?.length ?? 0,
    });
    return client;
  }

  /** How many clients are cached; for metrics and tests. */
  get size(): number {
    return this.clients.size;
  }

  /** Closes every client; for shutdown. */
  async close(): Promise<void> {
    const all = [...this.clients.values()];
    this.clients.clear();
    await Promise.all(all.map((e) => e.client.close()));
  }

  /** Nest calls this when the app shuts down, so open connections do not hold the process. */
  onApplicationShutdown(): Promise<void> {
    return this.close();
  }

  private evictIdle(now: number): void {
    for (const [key, e] of this.clients) {
      if (now - e.lastUsedMs < this.idleTimeoutMs) continue;
      this.clients.delete(key);
      // close() lets requests in flight finish before the pools go away.
      e.client
        .close()
        .catch((err: unknown) =>
          this.logger.warn('Closing an idle Actions client failed', { error: String(err) }),
        );
    }
  }
}

/**
 * A digest, not the inputs, is the map key, so no token or private key sits in a string that a heap
 * dump or a debug log of the cache would show.
 */
export function clientKey(o: ClientForOptions): string {
  const creds =
    o.credentials.kind === 'pat'
      ? ['pat', o.credentials.token]
      : ['app', o.credentials.appId, String(o.credentials.installationId), o.credentials.privateKey];
  const proxy = o.proxy
    ? [o.proxy.http ?? '', o.proxy.https ?? '', [...(o.proxy.noProxy ?? [])].sort().join(',')]
    : null;
  const material = JSON.stringify({
    configUrl: o.configUrl.trim().replace(/\/+$/, ''),
    namespace: o.namespace,
    creds,
    proxy,
    rootCAs: [...(o.rootCAs ?? [])].map((pem) => pem.trim()).sort(),
  });
  return createHash('sha256').update(material).digest('hex');
}
