import type { ResourceKind } from '@aro/api';
import { getOrCreateGauge, metricsRegistry, silentLogger, type Logger } from '@aro/observability';
import type { Gauge, Registry } from 'prom-client';
import type { KubeClient } from '../client/kube-client';
import type { KubeObject, ListOptions } from '../client/types';
import { type InformerEvent, ObjectStore } from './store';
import { Watcher } from './watcher';

export type { InformerEvent } from './store';

export type InformerEventHandler<T> = (e: InformerEvent<T>) => void;

export interface InformerOptions extends ListOptions {
  /**
   * A watch that delivers nothing, not even a bookmark, for this long is taken for stuck (a half-open
   * connection, a proxy that stopped forwarding): it is aborted and the informer lists again. The server
   * sends a bookmark about every minute, so the default of 5 minutes never fires on a healthy watch.
   */
  silenceTimeoutMs?: number;
  /** `health()` turns false after this long without a successful list or any watch traffic. */
  unhealthyAfterMs?: number;
  /** How long the server keeps one watch open; default a random 5 to 10 minutes per watch, as client-go. */
  watchTimeoutSeconds?: number;
  backoff?: { initialMs: number; maxMs: number };
  logger?: Logger;
  registry?: Registry;
}

function objectsGauge(registry: Registry): Gauge<'resource' | 'scope'> {
  return getOrCreateGauge(registry, {
    name: 'aro_informer_objects',
    help: 'Objects held in an informer cache',
    labelNames: ['resource', 'scope'],
  });
}

/**
 * A local copy of one kind's objects (in one namespace, or all), kept current by list-then-watch, with
 * event handlers and secondary indexes: a {@link Watcher} (list-then-watch, backoff, relist on 410 or
 * silence) feeding an {@link ObjectStore} (objects by key, with their indexes), as kube-rs keeps
 * watcher, store and reflector apart. A relist after a gap is reported as the difference (vanished
 * objects as `deleted`, changed ones as `modified`). Readers and handlers get deep copies.
 */
export class Informer<T extends KubeObject> {
  private readonly store: ObjectStore<T>;
  private readonly watcher: Watcher<T>;
  private readonly handlers: InformerEventHandler<T>[] = [];
  private readonly log: Logger;
  private readonly objects: Gauge<'resource' | 'scope'>;
  private readonly labels: { resource: string; scope: string };

  private synced = false;
  private stopController: AbortController | undefined;
  private running: Promise<void> | undefined;
  private syncWaiters = new Set<{ resolve: () => void; reject: (e: Error) => void }>();

  constructor(
    client: KubeClient,
    readonly kind: ResourceKind,
    opts: InformerOptions = {},
  ) {
    const silenceTimeoutMs = opts.silenceTimeoutMs ?? 5 * 60_000;
    const namespace = kind.namespaced ? opts.namespace || undefined : undefined;
    this.labels = {
      resource: kind.group ? `${kind.plural}.${kind.group}` : kind.plural,
      scope: namespace ?? '',
    };
    this.log = (opts.logger ?? silentLogger).child({
      component: 'informer',
      resource: this.labels.resource,
      ...(namespace ? { namespace } : {}),
    });
    const registry = opts.registry ?? metricsRegistry();
    this.objects = objectsGauge(registry);
    this.store = new ObjectStore<T>(kind, this.labels.resource, this.log);
    this.watcher = new Watcher<T>(
      client,
      kind,
      { namespace, labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector },
      this.labels,
      {
        silenceTimeoutMs,
        unhealthyAfterMs: opts.unhealthyAfterMs ?? 2 * silenceTimeoutMs,
        watchTimeoutSeconds: opts.watchTimeoutSeconds,
        backoff: opts.backoff ?? { initialMs: 1_000, maxMs: 30_000 },
      },
      {
        listed: (items, resourceVersion) => this.listed(items, resourceVersion),
        event: (e) => {
          this.dispatch(this.store.apply(e.type, e.object));
          this.objects.set(this.labels, this.store.size);
        },
      },
      this.log,
      registry,
    );
  }

  /**
   * Registers a handler. One added after objects are already cached is first told about each of them as
   * `added`, so late registration misses nothing. A handler that throws is logged and does not stop others.
   */
  addEventHandler(handler: InformerEventHandler<T>): void {
    this.handlers.push(handler);
    for (const object of this.store.values()) this.callHandler(handler, { type: 'added', object });
  }

  /** A secondary index: `fn` maps an object to the values it is found under by `byIndex(name, value)`. */
  addIndex(name: string, fn: (o: T) => string[]): void {
    this.store.addIndex(name, fn);
  }

  /** Begins list-then-watch in the background and returns at once; `waitForSync` tells when it has listed. */
  async start(): Promise<void> {
    if (this.running) return;
    const controller = new AbortController();
    this.stopController = controller;
    this.running = this.watcher.run(controller.signal).catch((err: unknown) => {
      // run() handles its own errors; reaching here is a bug worth seeing.
      this.log.error('Informer loop ended unexpectedly', err);
    });
  }

  /** Ends the watch and the loop; waiters of `waitForSync` are rejected. The cached objects stay readable. */
  async stop(): Promise<void> {
    this.stopController?.abort();
    await this.running;
    this.running = undefined;
    const err = new Error(`Informer for ${this.labels.resource} stopped before it synced`);
    for (const w of this.syncWaiters) w.reject(err);
    this.syncWaiters.clear();
  }

  hasSynced(): boolean {
    return this.synced;
  }

  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.synced) return Promise.resolve();
    if (signal?.aborted) return Promise.reject(signal.reason ?? new Error('aborted'));
    return new Promise<void>((resolve, reject) => {
      const waiter = {
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        reject: (e: Error) => {
          signal?.removeEventListener('abort', onAbort);
          reject(e);
        },
      };
      const onAbort = () => {
        this.syncWaiters.delete(waiter);
        reject(signal?.reason ?? new Error('aborted'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.syncWaiters.add(waiter);
    });
  }

  /** A copy of the cached object, or undefined. `namespace` is ignored for cluster-scoped kinds. */
  get(namespace: string, name: string): T | undefined {
    return this.store.get(namespace, name);
  }

  /** Copies of the cached objects, all or those of one namespace. */
  list(namespace?: string): T[] {
    return this.store.list(namespace);
  }

  /** Copies of the objects the named index files under `value`. */
  byIndex(name: string, value: string): T[] {
    return this.store.byIndex(name, value);
  }

  /** See {@link Watcher.health}; an informer not started is healthy. */
  health(): { healthy: boolean; reason?: string; lastError?: string } {
    return this.watcher.health(this.running !== undefined);
  }

  /** A fresh list: the store takes it in, handlers hear what changed, and the first one syncs. */
  private listed(items: T[], resourceVersion: string): void {
    const events = this.store.replace(items);
    this.objects.set(this.labels, this.store.size);
    for (const e of events) this.dispatch(e);
    if (!this.synced) {
      this.synced = true;
      this.log.info('Informer synced', { objects: this.store.size, resourceVersion });
      for (const w of this.syncWaiters) w.resolve();
      this.syncWaiters.clear();
    } else {
      this.log.info('Relisted', { objects: this.store.size, changes: events.length, resourceVersion });
    }
  }

  private dispatch(e: InformerEvent<T>): void {
    for (const handler of this.handlers) this.callHandler(handler, e);
  }

  private callHandler(handler: InformerEventHandler<T>, e: InformerEvent<T>): void {
    try {
      handler({
        type: e.type,
        object: structuredClone(e.object),
        ...(e.oldObject ? { oldObject: structuredClone(e.oldObject) } : {}),
      });
    } catch (err) {
      this.log.error('An informer event handler threw', err, {
        event: e.type,
        name: e.object.metadata?.name,
        objectNamespace: e.object.metadata?.namespace,
      });
    }
  }
}
