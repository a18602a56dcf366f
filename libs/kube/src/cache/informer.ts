import type { ResourceKind } from '@aro/api';
import {
  getOrCreateCounter,
  getOrCreateGauge,
  metricsRegistry,
  silentLogger,
  type Logger,
} from '@aro/observability';
import type { Counter, Gauge, Registry } from 'prom-client';
import { isGone } from '../client/errors';
import type { KubeClient } from '../client/kube-client';
import type { KubeObject, ListOptions, WatchEvent } from '../client/types';
import { exponentialBackoffMs } from '../queue/rate-limiter';

export interface InformerEvent<T> {
  type: 'added' | 'modified' | 'deleted';
  /** For `deleted`, the last state the informer knew. */
  object: T;
  /** For `modified`, the state it replaced. */
  oldObject?: T;
}

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

interface Index<T> {
  fn: (o: T) => string[];
  byValue: Map<string, Set<string>>;
  valuesByKey: Map<string, string[]>;
}

type WatchOutcome = 'closed' | 'silent';

interface InformerMetrics {
  lists: Counter<'resource' | 'scope'>;
  watchRestarts: Counter<'resource' | 'scope' | 'reason'>;
  objects: Gauge<'resource' | 'scope'>;
}

function informerMetrics(registry: Registry): InformerMetrics {
  return {
    lists: getOrCreateCounter(registry, {
      name: 'aro_informer_lists_total',
      help: 'Full lists made by an informer: the first one, and each after a 410 Gone, a silent watch or an error',
      labelNames: ['resource', 'scope'],
    }),
    watchRestarts: getOrCreateCounter(registry, {
      name: 'aro_informer_watch_restarts_total',
      help: 'Watches an informer opened again, by why the previous one ended (closed, gone, silent, error)',
      labelNames: ['resource', 'scope', 'reason'],
    }),
    objects: getOrCreateGauge(registry, {
      name: 'aro_informer_objects',
      help: 'Objects held in an informer cache',
      labelNames: ['resource', 'scope'],
    }),
  };
}

/** A watch that ends cleanly this soon without an event counts as a failure, so a flapping proxy gets backoff. */
const MIN_HEALTHY_WATCH_MS = 1_000;

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const onAbort = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * A local copy of one kind's objects (in one namespace, or all), kept current by list-then-watch, with
 * event handlers and secondary indexes.
 *
 * It keeps going whatever the server does, unlike client-node's informer that stops on the first
 * non-410 error: a 410 Gone relists at once and reports the difference (vanished objects as `deleted`,
 * changed ones as `modified`); a watch the server closes is reopened from the last resourceVersion; an
 * error or an unreachable server is retried with exponential backoff; a silent watch is aborted and
 * relisted. Readers get deep copies, so a reconciler that mutates what it read cannot corrupt the cache.
 */
export class Informer<T extends KubeObject> {
  private readonly store = new Map<string, T>();
  private readonly indexes = new Map<string, Index<T>>();
  private readonly handlers: InformerEventHandler<T>[] = [];
  private readonly log: Logger;
  private readonly metrics: InformerMetrics;
  private readonly labels: { resource: string; scope: string };
  private readonly silenceTimeoutMs: number;
  private readonly unhealthyAfterMs: number;
  private readonly backoff: { initialMs: number; maxMs: number };
  private readonly listOptions: ListOptions;

  private resourceVersion: string | undefined;
  private synced = false;
  private stopController: AbortController | undefined;
  private running: Promise<void> | undefined;
  private lastProgressAt = 0;
  private lastError: string | undefined;
  /**
   * Attempts in a row that got no watch event through; drives the backoff. A successful list does not
   * reset it: a server that lists fine but expires every watch would otherwise be relisted in a hot loop.
   */
  private failures = 0;
  private syncWaiters = new Set<{ resolve: () => void; reject: (e: Error) => void }>();

  constructor(
    private readonly client: KubeClient,
    readonly kind: ResourceKind,
    private readonly opts: InformerOptions = {},
  ) {
    this.silenceTimeoutMs = opts.silenceTimeoutMs ?? 5 * 60_000;
    this.unhealthyAfterMs = opts.unhealthyAfterMs ?? 2 * this.silenceTimeoutMs;
    this.backoff = opts.backoff ?? { initialMs: 1_000, maxMs: 30_000 };
    const namespace = kind.namespaced ? opts.namespace || undefined : undefined;
    this.listOptions = { namespace, labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector };
    this.labels = {
      resource: kind.group ? `${kind.plural}.${kind.group}` : kind.plural,
      scope: namespace ?? '',
    };
    this.log = (opts.logger ?? silentLogger).child({
      component: 'informer',
      resource: this.labels.resource,
      ...(namespace ? { namespace } : {}),
    });
    this.metrics = informerMetrics(opts.registry ?? metricsRegistry());
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
    if (this.indexes.has(name))
      throw new Error(`Informer for ${this.labels.resource} already has index ${name}`);
    const index: Index<T> = { fn, byValue: new Map(), valuesByKey: new Map() };
    this.indexes.set(name, index);
    for (const [key, object] of this.store) this.indexObject(index, key, object);
  }

  /** Begins list-then-watch in the background and returns at once; `waitForSync` tells when it has listed. */
  async start(): Promise<void> {
    if (this.running) return;
    const controller = new AbortController();
    this.stopController = controller;
    this.lastProgressAt = Date.now();
    this.running = this.run(controller.signal).catch((err: unknown) => {
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
    const object = this.store.get(this.key(namespace, name));
    return object === undefined ? undefined : structuredClone(object);
  }

  /** Copies of the cached objects, all or those of one namespace. */
  list(namespace?: string): T[] {
    const out: T[] = [];
    for (const object of this.store.values()) {
      if (!namespace || !this.kind.namespaced || object.metadata?.namespace === namespace) {
        out.push(structuredClone(object));
      }
    }
    return out;
  }

  /** Copies of the objects the named index files under `value`. */
  byIndex(name: string, value: string): T[] {
    const index = this.indexes.get(name);
    if (!index) throw new Error(`Informer for ${this.labels.resource} has no index ${name}`);
    const keys = index.byValue.get(value) ?? new Set<string>();
    return [...keys].map((key) => structuredClone(this.store.get(key) as T));
  }

  /**
   * Unhealthy when nothing has worked for longer than the bound: no list succeeded and no watch event,
   * bookmark or clean close arrived. A healthy watch makes progress at least at every server bookmark.
   * `lastError` is the failure since the last progress, if any, healthy or not.
   */
  health(): { healthy: boolean; reason?: string; lastError?: string } {
    const lastError = this.lastError === undefined ? {} : { lastError: this.lastError };
    if (!this.running) return { healthy: true, ...lastError };
    const quietMs = Date.now() - this.lastProgressAt;
    if (quietMs <= this.unhealthyAfterMs) return { healthy: true, ...lastError };
    const why = this.lastError ? `; last error: ${this.lastError}` : '';
    return {
      healthy: false,
      reason: `informer for ${this.labels.resource} has made no list or watch progress for ${Math.round(quietMs / 1000)} s${why}`,
      ...lastError,
    };
  }

  private async run(stop: AbortSignal): Promise<void> {
    let needList = true;
    while (!stop.aborted) {
      try {
        if (needList) {
          await this.relist(stop);
          needList = false;
        }
        const startedAt = Date.now();
        const { outcome, events } = await this.watchOnce(stop);
        if (stop.aborted) break;
        if (outcome === 'silent') {
          this.lastError = `the watch sent nothing for ${this.silenceTimeoutMs} ms`;
          this.log.warn('The watch went silent; relisting', { silenceTimeoutMs: this.silenceTimeoutMs });
          this.metrics.watchRestarts.inc({ ...this.labels, reason: 'silent' });
          needList = true;
          this.failures++;
          // The first silent watch relists at once; a server that keeps going silent gets backoff.
          if (this.failures > 1) await sleep(this.delay(this.failures - 1), stop);
          continue;
        }
        this.metrics.watchRestarts.inc({ ...this.labels, reason: 'closed' });
        if (events > 0 || Date.now() - startedAt >= MIN_HEALTHY_WATCH_MS) {
          this.failures = 0;
          this.progress();
        } else {
          this.failures++;
          await sleep(this.delay(this.failures), stop);
        }
      } catch (err) {
        if (stop.aborted) break;
        this.failures++;
        this.lastError = err instanceof Error ? err.message : String(err);
        if (isGone(err)) {
          this.log.info('The watch resourceVersion expired; relisting', {
            resourceVersion: this.resourceVersion,
          });
          this.metrics.watchRestarts.inc({ ...this.labels, reason: 'gone' });
          needList = true;
          if (this.failures > 1) await sleep(this.delay(this.failures - 1), stop);
          continue;
        }
        const delayMs = this.delay(this.failures);
        this.log.warn('List or watch failed; retrying', {
          error: this.lastError,
          attempt: this.failures,
          delayMs,
        });
        if (!needList) this.metrics.watchRestarts.inc({ ...this.labels, reason: 'error' });
        await sleep(delayMs, stop);
      }
    }
  }

  /** Exponential backoff with jitter in [50%, 100%] so many informers do not retry in lockstep. */
  private delay(attempt: number): number {
    const base = exponentialBackoffMs(attempt, this.backoff.initialMs, this.backoff.maxMs);
    return Math.round(base * (0.5 + Math.random() / 2));
  }

  private progress(): void {
    this.lastProgressAt = Date.now();
    this.lastError = undefined;
  }

  /**
   * Lists afresh and reconciles the store against the list, telling handlers what changed while the
   * informer was not watching. Equal resourceVersions of the same object mean no change (the one
   * comparison that is safe: equality, never order).
   */
  private async relist(stop: AbortSignal): Promise<void> {
    const { items, resourceVersion } = await this.client.listWithVersion<T>(
      this.kind,
      this.listOptions,
      stop,
    );
    this.metrics.lists.inc(this.labels);
    const seen = new Set<string>();
    const events: InformerEvent<T>[] = [];
    for (const object of items) {
      const key = this.keyOf(object);
      seen.add(key);
      const old = this.store.get(key);
      if (old === undefined) {
        this.put(key, object);
        events.push({ type: 'added', object });
      } else if (old.metadata?.resourceVersion !== object.metadata?.resourceVersion) {
        this.put(key, object);
        events.push({ type: 'modified', object, oldObject: old });
      }
    }
    for (const [key, old] of this.store) {
      if (!seen.has(key)) {
        this.remove(key);
        events.push({ type: 'deleted', object: old });
      }
    }
    this.resourceVersion = resourceVersion;
    this.metrics.objects.set(this.labels, this.store.size);
    this.progress();
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

  private async watchOnce(stop: AbortSignal): Promise<{ outcome: WatchOutcome; events: number }> {
    const controller = new AbortController();
    const onStop = () => controller.abort();
    stop.addEventListener('abort', onStop, { once: true });
    if (stop.aborted) controller.abort();
    let lastActivityAt = Date.now();
    let silent = false;
    let events = 0;
    // Re-armed lazily rather than on every event: one timer per silence period, not per event.
    let watchdog: NodeJS.Timeout;
    const check = () => {
      const quietMs = Date.now() - lastActivityAt;
      if (quietMs >= this.silenceTimeoutMs) {
        silent = true;
        controller.abort();
      } else {
        watchdog = setTimeout(check, this.silenceTimeoutMs - quietMs);
      }
    };
    watchdog = setTimeout(check, this.silenceTimeoutMs);
    const timeoutSeconds = this.opts.watchTimeoutSeconds ?? Math.floor(300 + Math.random() * 300);
    try {
      await this.client.watch<T>(
        this.kind,
        {
          ...this.listOptions,
          resourceVersion: this.resourceVersion ?? '',
          allowWatchBookmarks: true,
          timeoutSeconds,
        },
        (e) => {
          lastActivityAt = Date.now();
          events++;
          this.failures = 0;
          this.progress();
          this.apply(e);
        },
        controller.signal,
      );
    } finally {
      clearTimeout(watchdog);
      stop.removeEventListener('abort', onStop);
    }
    return { outcome: silent ? 'silent' : 'closed', events };
  }

  private apply(e: WatchEvent<T>): void {
    const rv = e.object.metadata?.resourceVersion;
    if (e.type === 'BOOKMARK') {
      if (rv) this.resourceVersion = rv;
      return;
    }
    const key = this.keyOf(e.object);
    const old = this.store.get(key);
    if (e.type === 'DELETED') {
      this.remove(key);
      this.dispatch({ type: 'deleted', object: e.object });
    } else {
      this.put(key, e.object);
      this.dispatch(
        old === undefined
          ? { type: 'added', object: e.object }
          : { type: 'modified', object: e.object, oldObject: old },
      );
    }
    if (rv) this.resourceVersion = rv;
    this.metrics.objects.set(this.labels, this.store.size);
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

  private key(namespace: string, name: string): string {
    return `${this.kind.namespaced ? namespace : ''}/${name}`;
  }

  private keyOf(object: T): string {
    return this.key(object.metadata?.namespace ?? '', object.metadata?.name ?? '');
  }

  private put(key: string, object: T): void {
    // managedFields (server-side apply bookkeeping, about a kilobyte a pod) is read by no controller:
    // dropped as the object enters the store, it costs nothing per cached object.
    if (object.metadata?.managedFields) delete object.metadata.managedFields;
    this.store.set(key, object);
    for (const index of this.indexes.values()) this.indexObject(index, key, object);
  }

  private remove(key: string): void {
    this.store.delete(key);
    for (const index of this.indexes.values()) this.unindex(index, key);
  }

  private indexObject(index: Index<T>, key: string, object: T): void {
    this.unindex(index, key);
    let values: string[];
    try {
      values = index.fn(object);
    } catch (err) {
      // One odd object must not take the informer down; it is just not findable through this index.
      this.log.error('An index function threw; the object is left out of the index', err, { key });
      values = [];
    }
    index.valuesByKey.set(key, values);
    for (const value of values) {
      let keys = index.byValue.get(value);
      if (!keys) index.byValue.set(value, (keys = new Set()));
      keys.add(key);
    }
  }

  private unindex(index: Index<T>, key: string): void {
    for (const value of index.valuesByKey.get(key) ?? []) {
      const keys = index.byValue.get(value);
      keys?.delete(key);
      if (keys?.size === 0) index.byValue.delete(value);
    }
    index.valuesByKey.delete(key);
  }
}
