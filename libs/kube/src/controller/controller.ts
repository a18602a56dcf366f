import { randomUUID } from 'node:crypto';
import { metricsRegistry, type Logger } from '@aro/observability';
import type { Registry } from 'prom-client';
import type { InformerEvent } from '../cache';
import type { KubeObject } from '../client';
import { retryAfterMsOf } from '../client/errors';
import type { HealthStatus, Runnable } from '../manager/runnable';
import { type Clock, systemClock } from '../queue/clock';
import type { RateLimiter } from '../queue/rate-limiter';
import { RateLimitingQueue } from '../queue/rate-limiting-queue';
import { type ReconcileOutcome, controllerMetrics, isPanic } from './metrics';
import type { Predicate } from './predicates';
import { isTerminalError } from './terminal-error';
import { type Reconciler, type Request, type Result, requestFromKey, requestKey } from './types';

export interface ControllerOptions {
  /** Workers reconciling different keys at once (one key never runs twice at once). Default 1. */
  maxConcurrentReconciles?: number;
  /** Retry policy; default per-key 5 ms..1000 s backoff under a 10/s, burst 100 bucket. */
  rateLimiter?: RateLimiter;
  /** A reconcile running longer than this makes health() fail, so /healthz restarts a wedged process. Default 10 min. */
  stuckReconcileThresholdMs?: number;
  /** Aborts a reconcile's signal after this long. Off by default: the reconciler bounds its own calls. */
  reconcileTimeoutMs?: number;
  /** Default true: only the leader reconciles. */
  needLeaderElection?: boolean;
}

export interface ControllerDeps {
  logger: Logger;
  registry?: Registry;
  clock?: Clock;
}

/** Turns one watch event into the requests it should trigger. */
export type EventMapper<T extends KubeObject> = (event: InformerEvent<T>) => Request[];

/** Where a controller's events come from: an Informer, or anything shaped like one. */
export interface EventSource<T> {
  /** Must first report every object already known as `added`, as Informer does. */
  addEventHandler(handler: (event: InformerEvent<T>) => void): void;
  list(): T[];
}

interface Source {
  informer: EventSource<KubeObject>;
  map: EventMapper<KubeObject>;
  predicates: Predicate<KubeObject>[];
}

interface InFlight {
  key: string;
  startedAt: number;
}

/**
 * Feeds watch events through predicates into a rate-limited work queue and runs a reconciler on the
 * keys with a fixed pool of workers (controller-runtime's controller).
 *
 * Event handlers are attached when the controller is built, before the cache starts, so no event is
 * missed; on a replica that is not leading, keys accumulate (deduplicated, so at most one per object)
 * and are worked off once it leads. Starting also passes every cached object through the handlers
 * again as a create event: the new leader reconciles everything once, including keys a previous
 * leader's queue held when it died, and dedup makes the repeat free.
 */
export class Controller implements Runnable {
  readonly needLeaderElection: boolean;
  readonly queue: RateLimitingQueue;
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly maxConcurrent: number;
  private readonly stuckThresholdMs: number;
  private readonly reconcileTimeoutMs: number | undefined;
  private readonly sources: Source[] = [];
  private readonly inFlight = new Map<string, InFlight>();
  private started = false;
  private readonly metrics;

  constructor(
    readonly name: string,
    private readonly reconciler: Reconciler,
    deps: ControllerDeps,
    options: ControllerOptions = {},
  ) {
    this.clock = deps.clock ?? systemClock;
    this.maxConcurrent = options.maxConcurrentReconciles ?? 1;
    if (!Number.isInteger(this.maxConcurrent) || this.maxConcurrent < 1) {
      throw new Error(
        `controller ${name}: maxConcurrentReconciles must be a positive integer, got ${this.maxConcurrent}`,
      );
    }
    this.stuckThresholdMs = options.stuckReconcileThresholdMs ?? 10 * 60_000;
    this.reconcileTimeoutMs = options.reconcileTimeoutMs;
    this.needLeaderElection = options.needLeaderElection ?? true;
    this.log = deps.logger.child({ controller: name });
    const registry = deps.registry ?? metricsRegistry();
    this.queue = new RateLimitingQueue({
      name,
      rateLimiter: options.rateLimiter,
      clock: this.clock,
      registry,
    });
    this.metrics = controllerMetrics(registry, name);
    this.metrics.maxConcurrent.set({ controller: name }, this.maxConcurrent);
  }

  /** Enqueues the requests `map` derives from each event of `informer` that every predicate lets through. */
  watch<T extends KubeObject>(
    informer: EventSource<T>,
    map: EventMapper<T>,
    predicates: Predicate<T>[] = [],
  ): void {
    const source: Source = {
      informer: informer as EventSource<KubeObject>,
      map: map as EventMapper<KubeObject>,
      predicates: predicates as Predicate<KubeObject>[],
    };
    this.sources.push(source);
    informer.addEventHandler((event) => this.handle(source, event as InformerEvent<KubeObject>));
  }

  enqueue(req: Request): void {
    this.queue.add(requestKey(req));
  }

  async start(stop: AbortSignal, cancel?: AbortSignal): Promise<void> {
    if (this.started) throw new Error(`controller ${this.name} was already started; a controller runs once`);
    this.started = true;
    for (const source of this.sources) {
      for (const obj of source.informer.list()) this.handle(source, { type: 'added', object: obj });
    }
    this.log.info('Starting workers', { workerCount: this.maxConcurrent });
    const workers = Array.from({ length: this.maxConcurrent }, () => this.runWorker(cancel));
    await new Promise<void>((resolve) => {
      if (stop.aborted) resolve();
      else stop.addEventListener('abort', () => resolve(), { once: true });
    });
    this.log.info('Stopping: no new keys; waiting for reconciles in flight', {
      inFlight: this.inFlight.size,
    });
    this.queue.shutDown();
    await Promise.all(workers);
    this.log.info('All workers finished');
  }

  /** Unhealthy while some reconcile has run past the stuck threshold. */
  health(): HealthStatus {
    const now = this.clock.now();
    for (const { key, startedAt } of this.inFlight.values()) {
      const runningMs = now - startedAt;
      if (runningMs > this.stuckThresholdMs) {
        return {
          healthy: false,
          reason: `controller ${this.name}: reconcile of ${key} has run for ${Math.round(runningMs / 1000)} s (limit ${Math.round(this.stuckThresholdMs / 1000)} s)`,
        };
      }
    }
    return { healthy: true };
  }

  private handle(source: Source, event: InformerEvent<KubeObject>): void {
    let requests: Request[];
    try {
      if (!source.predicates.every((p) => admits(p, event))) return;
      requests = source.map(event);
    } catch (e) {
      // A broken predicate or mapper must not take the informer down; the event is lost, so say which.
      this.log.error('Could not map a watch event to requests', e, {
        event: event.type,
        object: `${event.object.metadata?.namespace ?? ''}/${event.object.metadata?.name ?? ''}`,
      });
      return;
    }
    for (const req of requests) this.queue.add(requestKey(req));
  }

  private async runWorker(cancel: AbortSignal | undefined): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      try {
        await this.reconcileKey(key, cancel);
      } catch (e) {
        // Only a bug in the bookkeeping below lands here; the worker lives on regardless.
        this.log.error('Unexpected failure handling a key', e, { key });
      } finally {
        this.queue.done(key);
      }
    }
  }

  private async reconcileKey(key: string, cancel: AbortSignal | undefined): Promise<void> {
    const req = requestFromKey(key);
    const reconcileID = randomUUID();
    const log = this.log.child({ namespace: req.namespace, name: req.name, reconcileID });
    const abort = new AbortController();
    const onCancel = (): void => abort.abort(cancel?.reason);
    if (cancel?.aborted) onCancel();
    else cancel?.addEventListener('abort', onCancel, { once: true });
    let timedOut = false;
    // Not a schedule: a deadline on this one reconcile.
    const timeout =
      this.reconcileTimeoutMs === undefined
        ? undefined
        : this.clock.setTimeout(() => {
            timedOut = true;
            abort.abort(new Error(`reconcile timed out after ${this.reconcileTimeoutMs} ms`));
          }, this.reconcileTimeoutMs);

    const startedAt = this.clock.now();
    this.inFlight.set(reconcileID, { key, startedAt });
    this.metrics.activeWorkers.inc({ controller: this.name });
    let result: Result | undefined;
    let failure: { error: unknown } | undefined;
    try {
      log.debug('Reconciling');
      result = await this.reconciler.reconcile(req, { signal: abort.signal, log });
    } catch (error) {
      failure = { error };
    } finally {
      timeout?.cancel();
      cancel?.removeEventListener('abort', onCancel);
      this.inFlight.delete(reconcileID);
      this.metrics.activeWorkers.dec({ controller: this.name });
      this.metrics.time.observe({ controller: this.name }, Math.max(0, this.clock.now() - startedAt) / 1000);
    }

    if (failure !== undefined) {
      // As controller-runtime: a timeout is counted only when the controller's own deadline fired.
      if (timedOut) this.metrics.timeouts.inc({ controller: this.name });
      if (isPanic(failure.error)) this.metrics.panics.inc({ controller: this.name });
    }
    let outcome: ReconcileOutcome;
    if (failure !== undefined && isTerminalError(failure.error)) {
      // Retrying cannot help: the key's next event brings it back, not the backoff.
      outcome = 'error';
      this.metrics.errors.inc({ controller: this.name });
      this.metrics.terminalErrors.inc({ controller: this.name });
      this.queue.forget(key);
      log.error('Reconciler error is terminal; not retrying until the object changes', failure.error);
    } else if (failure !== undefined) {
      outcome = 'error';
      this.metrics.errors.inc({ controller: this.name });
      // A 429 the client stopped retrying still says when the apiserver will take it: the backoff
      // (5 ms at first) must not bring it back sooner.
      this.queue.addRateLimited(key, retryAfterMsOf(failure.error));
      log.error('Reconciler error; retrying with backoff', failure.error, {
        requeues: this.queue.numRequeues(key),
      });
    } else if ((result?.requeueAfterMs ?? 0) > 0) {
      outcome = 'requeue_after';
      this.queue.forget(key);
      this.queue.addAfter(key, result!.requeueAfterMs!);
    } else if (result?.requeue) {
      outcome = 'requeue';
      this.queue.addRateLimited(key);
    } else {
      outcome = 'success';
      this.queue.forget(key);
    }
    this.metrics.total.inc({ controller: this.name, result: outcome });
    log.debug('Reconciled', { result: outcome });
  }
}

function admits(predicate: Predicate<KubeObject>, event: InformerEvent<KubeObject>): boolean {
  switch (event.type) {
    case 'added':
      return predicate.create?.(event.object) ?? true;
    case 'modified':
      return predicate.update?.(event.oldObject, event.object) ?? true;
    case 'deleted':
      return predicate.delete?.(event.object) ?? true;
  }
}
