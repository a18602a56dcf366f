import type { ResourceKind } from '@aro/api';
import { silentLogger, type Logger } from '@aro/observability';
import type { Registry } from 'prom-client';
import { KubeApiError } from '../client/errors';
import type { KubeClient } from '../client/kube-client';
import type { KubeObject, ListOptions, Reader } from '../client/types';
import { CONTROLLING_OWNER_INDEX, controllingOwnerIndex } from './indexes';
import { Informer, type InformerOptions } from './informer';
import { NamespacedInformers, type CacheInformer } from './namespaced-informers';
import { parseFieldSelector, parseLabelSelector } from './selectors';

export interface InformerCacheOptions {
  /** Watch one namespace only; '' or undefined watches all. */
  namespace?: string;
  /**
   * More namespaces to watch beside `namespace` (the controller's own, where the listeners live, in a
   * single-namespace install). Ignored when `namespace` is all.
   */
  extraNamespaces?: readonly string[];
  logger?: Logger;
  silenceTimeoutMs?: number;
  unhealthyAfterMs?: number;
  watchTimeoutSeconds?: number;
  backoff?: { initialMs: number; maxMs: number };
  registry?: Registry;
  /**
   * How long a read waits for its kind's informer to sync before it fails (default 60 s), so a kind the
   * operator may not list (RBAC) fails the reconcile with a clear error instead of hanging its worker.
   */
  syncTimeoutMs?: number;
}

function kindKey(kind: ResourceKind): string {
  return `${kind.group}/${kind.version}/${kind.plural}`;
}

/**
 * The cached Reader: one informer per kind, made on first use, all in the cache's namespace scope. A read
 * waits for its kind's informer to sync, so the first read of a kind after start sees a complete list,
 * never a partial one. Lists filter by label selector locally with the server's semantics. Every informer
 * carries the controlling-owner index.
 *
 * The cache trails the server: a reconciler that must not act on stale state (upstream's check that a
 * pod is really gone) reads through the KubeClient instead.
 */
export class InformerCache implements Reader {
  private readonly informers = new Map<string, CacheInformer<KubeObject>>();
  /** The namespaces watched; undefined watches all. */
  private readonly namespaces: readonly string[] | undefined;
  private readonly log: Logger;
  private started = false;

  constructor(
    private readonly client: KubeClient,
    private readonly opts: InformerCacheOptions = {},
  ) {
    this.namespaces = opts.namespace
      ? [...new Set([opts.namespace, ...(opts.extraNamespaces ?? []).filter((n) => n !== '')])]
      : undefined;
    this.log = opts.logger ?? silentLogger;
  }

  /** The informer for a kind, made (and started, if the cache runs) on first call. */
  informerFor<T extends KubeObject>(kind: ResourceKind): CacheInformer<T> {
    const key = kindKey(kind);
    let informer = this.informers.get(key);
    if (!informer) {
      const make = (namespace: string | undefined): Informer<KubeObject> =>
        new Informer<KubeObject>(this.client, kind, this.informerOptions(namespace));
      informer =
        kind.namespaced && this.namespaces && this.namespaces.length > 1
          ? new NamespacedInformers(new Map(this.namespaces.map((ns) => [ns, make(ns)])))
          : make(this.namespaces?.[0]);
      informer.addIndex(CONTROLLING_OWNER_INDEX, controllingOwnerIndex);
      this.informers.set(key, informer);
      if (this.started) void informer.start();
    }
    return informer as unknown as CacheInformer<T>;
  }

  private informerOptions(namespace: string | undefined): InformerOptions {
    return {
      namespace,
      logger: this.log,
      silenceTimeoutMs: this.opts.silenceTimeoutMs,
      unhealthyAfterMs: this.opts.unhealthyAfterMs,
      watchTimeoutSeconds: this.opts.watchTimeoutSeconds,
      backoff: this.opts.backoff,
      registry: this.opts.registry,
    };
  }

  async start(): Promise<void> {
    this.started = true;
    await Promise.all([...this.informers.values()].map((i) => i.start()));
  }

  async stop(): Promise<void> {
    this.started = false;
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
  }

  async waitForSync(signal?: AbortSignal): Promise<void> {
    await Promise.all([...this.informers.values()].map((i) => i.waitForSync(signal)));
  }

  hasSynced(): boolean {
    return [...this.informers.values()].every((i) => i.hasSynced());
  }

  /** Unhealthy when any informer is; the reason names each one that is. */
  health(): { healthy: boolean; reason?: string } {
    const reasons = [...this.informers.values()]
      .map((i) => i.health())
      .filter((h) => !h.healthy)
      .map((h) => h.reason);
    return reasons.length === 0 ? { healthy: true } : { healthy: false, reason: reasons.join('; ') };
  }

  async get<T extends KubeObject>(kind: ResourceKind, namespace: string, name: string): Promise<T> {
    if (kind.namespaced) this.checkNamespace(kind, namespace);
    const informer = await this.syncedInformer<T>(kind);
    const object = informer.get(namespace, name);
    if (object === undefined) throw notFound(kind, namespace, name);
    return object;
  }

  async list<T extends KubeObject>(kind: ResourceKind, opts: ListOptions = {}): Promise<T[]> {
    if (kind.namespaced && opts.namespace) this.checkNamespace(kind, opts.namespace);
    const matchesLabels = parseLabelSelector(opts.labelSelector);
    const matchesFields = parseFieldSelector(opts.fieldSelector);
    const informer = await this.syncedInformer<T>(kind);
    return informer
      .list(opts.namespace || undefined)
      .filter((o) => matchesLabels(o.metadata?.labels) && matchesFields(o));
  }

  private async syncedInformer<T extends KubeObject>(kind: ResourceKind): Promise<CacheInformer<T>> {
    if (!this.started) {
      throw new Error(`The informer cache is not started; cannot read ${kind.kind} from it`);
    }
    const informer = this.informerFor<T>(kind);
    if (informer.hasSynced()) return informer;
    const timeoutMs = this.opts.syncTimeoutMs ?? 60_000;
    try {
      await informer.waitForSync(AbortSignal.timeout(timeoutMs));
    } catch (err) {
      const { lastError } = informer.health();
      const why = lastError ? `; last error: ${lastError}` : '';
      throw new Error(`The cache of ${kind.kind} has not synced within ${timeoutMs} ms${why}`, {
        cause: err,
      });
    }
    return informer;
  }

  private checkNamespace(kind: ResourceKind, namespace: string): void {
    if (this.namespaces && !this.namespaces.includes(namespace)) {
      throw new Error(
        `The informer cache watches namespace ${this.namespaces.join(', ')} only; cannot read ${kind.kind} in ${namespace || 'all namespaces'}`,
      );
    }
  }
}

/** The error the API server would have returned, so `isNotFound` works the same on either Reader. */
function notFound(kind: ResourceKind, namespace: string, name: string): KubeApiError {
  const resource = kind.group ? `${kind.plural}.${kind.group}` : kind.plural;
  const message = `${resource} "${name}" not found`;
  return new KubeApiError(
    404,
    { verb: 'get (cached)', kind, namespace: kind.namespaced ? namespace : undefined, name },
    { apiVersion: 'v1', kind: 'Status', status: 'Failure', reason: 'NotFound', code: 404, message },
  );
}
