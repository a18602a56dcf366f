import type { ResourceKind } from '@aro/api';
import { getOrCreateCounter, type Logger } from '@aro/observability';
import type { Counter, Registry } from 'prom-client';
import { KubeApiError, isGone } from '../client/errors';
import type { KubeClient } from '../client/kube-client';
import type { KubeObject, ListOptions, WatchEvent } from '../client/types';
import { exponentialBackoffMs } from '../queue/rate-limiter';

/** What a watcher hands on: each full list, and each watch event but bookmarks. */
export interface WatcherSink<T extends KubeObject> {
  listed(items: T[], resourceVersion: string): void;
  event(e: WatchEvent<T> & { type: 'ADDED' | 'MODIFIED' | 'DELETED' }): void;
}

export interface WatcherOptions {
  /** A watch that delivers nothing (not even a bookmark) this long is taken for stuck and relisted. */
  silenceTimeoutMs: number;
  /** `health()` turns false after this long without a successful list or any watch traffic. */
  unhealthyAfterMs: number;
  /** How long the server keeps one watch open; default a random 5 to 10 minutes per watch, as client-go. */
  watchTimeoutSeconds?: number;
  backoff: { initialMs: number; maxMs: number };
}

type WatchOutcome = 'closed' | 'silent';

interface WatcherMetrics {
  lists: Counter<'resource' | 'scope'>;
  watchRestarts: Counter<'resource' | 'scope' | 'reason'>;
}

function watcherMetrics(registry: Registry): WatcherMetrics {
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
    // Not a schedule: the backoff before this watch is opened again.
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * List-then-watch of one kind (in one namespace, or all) that keeps going whatever the server does,
 * unlike client-node's informer that stops on the first non-410 error: a 410 Gone relists at once; a
 * watch the server closes is reopened from the last resourceVersion (bookmarks included); an error or
 * an unreachable server is retried with exponential backoff; a silent watch is aborted and relisted.
 * What it lists and watches goes to its sink; it holds no objects itself.
 */
export class Watcher<T extends KubeObject> {
  private readonly metrics: WatcherMetrics;
  private resourceVersion: string | undefined;
  private lastProgressAt = Date.now();
  private lastError: string | undefined;
  /**
   * Attempts in a row that got no watch event through; drives the backoff. A successful list does not
   * reset it: a server that lists fine but expires every watch would otherwise be relisted in a hot loop.
   */
  private failures = 0;

  constructor(
    private readonly client: KubeClient,
    private readonly kind: ResourceKind,
    private readonly listOptions: ListOptions,
    private readonly labels: { resource: string; scope: string },
    private readonly opts: WatcherOptions,
    private readonly sink: WatcherSink<T>,
    private readonly log: Logger,
    registry: Registry,
  ) {
    this.metrics = watcherMetrics(registry);
  }

  /** Lists and watches until `stop` is aborted; never throws. */
  async run(stop: AbortSignal): Promise<void> {
    this.lastProgressAt = Date.now();
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
          this.lastError = `the watch sent nothing for ${this.opts.silenceTimeoutMs} ms`;
          this.log.warn('The watch went silent; relisting', { silenceTimeoutMs: this.opts.silenceTimeoutMs });
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
        // A server shedding load says when to come back; backoff alone may come sooner.
        const askedMs = err instanceof KubeApiError ? (err.retryAfterSeconds ?? 0) * 1000 : 0;
        const delayMs = Math.max(this.delay(this.failures), askedMs);
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

  /**
   * Unhealthy when nothing has worked for longer than the bound: no list succeeded and no watch event,
   * bookmark or clean close arrived. A healthy watch makes progress at least at every server bookmark.
   * `lastError` is the failure since the last progress, if any, healthy or not. A watcher not
   * `running` is healthy (it is not supposed to make progress).
   */
  health(running: boolean): { healthy: boolean; reason?: string; lastError?: string } {
    const lastError = this.lastError === undefined ? {} : { lastError: this.lastError };
    if (!running) return { healthy: true, ...lastError };
    const quietMs = Date.now() - this.lastProgressAt;
    if (quietMs <= this.opts.unhealthyAfterMs) return { healthy: true, ...lastError };
    const why = this.lastError ? `; last error: ${this.lastError}` : '';
    return {
      healthy: false,
      reason: `informer for ${this.labels.resource} has made no list or watch progress for ${Math.round(quietMs / 1000)} s${why}`,
      ...lastError,
    };
  }

  /** Exponential backoff with jitter in [50%, 100%] so many informers do not retry in lockstep. */
  private delay(attempt: number): number {
    const { initialMs, maxMs } = this.opts.backoff;
    return Math.round(exponentialBackoffMs(attempt, initialMs, maxMs) * (0.5 + Math.random() / 2));
  }

  private progress(): void {
    this.lastProgressAt = Date.now();
    this.lastError = undefined;
  }

  private async relist(stop: AbortSignal): Promise<void> {
    const { items, resourceVersion } = await this.client.listWithVersion<T>(
      this.kind,
      this.listOptions,
      stop,
    );
    this.metrics.lists.inc(this.labels);
    this.resourceVersion = resourceVersion;
    this.progress();
    this.sink.listed(items, resourceVersion);
  }

  private async watchOnce(stop: AbortSignal): Promise<{ outcome: WatchOutcome; events: number }> {
    const controller = new AbortController();
    const onStop = () => controller.abort();
    stop.addEventListener('abort', onStop, { once: true });
    if (stop.aborted) controller.abort();
    let lastActivityAt = Date.now();
    let silent = false;
    let events = 0;
    const { silenceTimeoutMs } = this.opts;
    // Re-armed lazily rather than on every event: one timer per silence period, not per event.
    let watchdog: NodeJS.Timeout;
    const check = () => {
      const quietMs = Date.now() - lastActivityAt;
      if (quietMs >= silenceTimeoutMs) {
        silent = true;
        controller.abort();
      } else {
        watchdog = setTimeout(check, silenceTimeoutMs - quietMs);
      }
    };
    // Not a schedule: a deadline on one watch stream gone silent, reset by its events.
    watchdog = setTimeout(check, silenceTimeoutMs);
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
          const rv = e.object.metadata?.resourceVersion;
          if (e.type !== 'BOOKMARK') this.sink.event({ type: e.type, object: e.object });
          if (rv) this.resourceVersion = rv;
        },
        controller.signal,
      );
    } finally {
      clearTimeout(watchdog);
      stop.removeEventListener('abort', onStop);
    }
    return { outcome: silent ? 'silent' : 'closed', events };
  }
}
