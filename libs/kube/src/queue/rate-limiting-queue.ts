import type { Registry } from 'prom-client';
import { Clock, TimerHandle, systemClock } from './clock';
import { QueueMetrics } from './metrics';
import { RateLimiter, defaultControllerRateLimiter } from './rate-limiter';

/**
 * The controller work queue, with client-go's workqueue semantics.
 *
 * Written in the project rather than taken from npm: no package offers the combination a controller
 * needs (the dirty/processing sets that deduplicate keys and keep one key off two workers, re-adds
 * deferred to `done`, delayed adds, per-key backoff under an overall bucket), and gluing p-queue and
 * a limiter together is more code than this (see design/research/ts-stack.md, section 3).
 *
 * Invariants:
 * - a key is queued at most once however often it is added (`dirty`), so a burst of watch events for
 *   one object costs one reconcile;
 * - a key handed out by `get` is in `processing` until `done`; adding it meanwhile only marks it dirty,
 *   and `done` queues it again, so two workers never reconcile one object at once and no event that
 *   arrived during a reconcile is lost;
 * - after shutdown, `get` answers `undefined` at once even if keys are still queued: a stopping
 *   controller takes no new work. The queued keys are not lost for good: the next leader reconciles
 *   every object on start.
 */
export interface RateLimitingQueueOptions {
  /** Label for the workqueue_* metrics (controller-runtime uses the controller name). */
  name: string;
  rateLimiter?: RateLimiter;
  clock?: Clock;
  registry?: Registry;
}

interface Waiting {
  readonly key: string;
  readonly readyAt: number;
  /** Insertion order, so keys due at the same moment are queued in the order they were added. */
  readonly seq: number;
}

export class RateLimitingQueue {
  private readonly clock: Clock;
  private readonly rateLimiter: RateLimiter;
  private readonly metrics: QueueMetrics;

  private readonly queue: string[] = [];
  private head = 0;
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly addedAt = new Map<string, number>();
  private readonly startedAt = new Map<string, number>();
  private readonly getters: Array<(key: string | undefined) => void> = [];

  private readonly waitingReadyAt = new Map<string, number>();
  private readonly waitingHeap: Waiting[] = [];
  private timer: TimerHandle | undefined;
  private timerAt = Infinity;
  private waitingSeq = 0;

  private shuttingDown = false;
  private drainWaiters: Array<() => void> = [];

  constructor(options: RateLimitingQueueOptions) {
    this.clock = options.clock ?? systemClock;
    this.rateLimiter = options.rateLimiter ?? defaultControllerRateLimiter(this.clock);
    this.metrics = new QueueMetrics(options.name, options.registry, () => this.inProgress());
  }

  /** Queues `key` unless it is already queued; ignored after shutdown. */
  add(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.dirty.add(key);
    this.addedAt.set(key, this.clock.now());
    this.metrics.added(this.dirty.size);
    if (this.processing.has(key)) return;
    this.queue.push(key);
    this.dispatch();
  }

  /**
   * Queues `key` after `delayMs`. If the key is already waiting, the earlier of the two times holds: a
   * later retry must not postpone a sooner one.
   */
  addAfter(key: string, delayMs: number): void {
    if (this.shuttingDown) return;
    // client-go counts a retry only for an add that waits: an immediate add is not a requeue.
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    this.metrics.retried();
    const readyAt = this.clock.now() + delayMs;
    const current = this.waitingReadyAt.get(key);
    if (current !== undefined && current <= readyAt) return;
    this.waitingReadyAt.set(key, readyAt);
    heapPush(this.waitingHeap, { key, readyAt, seq: this.waitingSeq++ });
    this.armTimer();
  }

  /** Queues `key` after the wait its rate limiter asks for: backoff for this key, and the overall bucket. */
  /** `atLeastMs`: a wait the caller was told to keep (an apiserver's Retry-After), if longer than the backoff. */
  addRateLimited(key: string, atLeastMs = 0): void {
    this.addAfter(key, Math.max(this.rateLimiter.when(key), atLeastMs));
  }

  /** Clears the key's backoff history; call it once the key has been handled successfully. */
  forget(key: string): void {
    this.rateLimiter.forget(key);
  }

  numRequeues(key: string): number {
    return this.rateLimiter.numRequeues(key);
  }

  /**
   * The next key to work on, which the caller owns until `done(key)`. Waits while the queue is empty;
   * `undefined` once the queue is shut down.
   */
  get(): Promise<string | undefined> {
    if (this.shuttingDown) return Promise.resolve(undefined);
    const key = this.take();
    if (key !== undefined) return Promise.resolve(key);
    return new Promise((resolve) => this.getters.push(resolve));
  }

  /** Ends the work on `key`; if it was added meanwhile it goes back on the queue now. */
  done(key: string): void {
    if (!this.processing.delete(key)) return;
    const started = this.startedAt.get(key);
    this.startedAt.delete(key);
    if (started !== undefined) this.metrics.finished(seconds(this.clock.now() - started));
    if (this.dirty.has(key) && !this.shuttingDown) {
      this.queue.push(key);
      this.dispatch();
    }
    if (this.processing.size === 0 && this.drainWaiters.length > 0) {
      const waiters = this.drainWaiters;
      this.drainWaiters = [];
      for (const w of waiters) w();
    }
  }

  /** Stops handing out keys and ignores new ones. Workers blocked in `get` receive `undefined`. */
  shutDown(): void {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    this.timer?.cancel();
    this.timer = undefined;
    this.timerAt = Infinity;
    this.waitingHeap.length = 0;
    this.waitingReadyAt.clear();
    for (const getter of this.getters.splice(0)) getter(undefined);
    this.metrics.close();
  }

  /** `shutDown`, then resolves once every key handed out has been marked `done`. */
  shutDownWithDrain(): Promise<void> {
    this.shutDown();
    if (this.processing.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** Keys queued and not yet handed out (not counting keys waiting on a delay or in processing). */
  len(): number {
    return this.queue.length - this.head;
  }

  /** Keys handed out and not yet `done`. */
  inFlight(): number {
    return this.processing.size;
  }

  private take(): string | undefined {
    if (this.head >= this.queue.length) return undefined;
    const key = this.queue[this.head++];
    // Compact now and then instead of shifting on every take (O(n) each).
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
    this.processing.add(key);
    this.dirty.delete(key);
    const now = this.clock.now();
    this.startedAt.set(key, now);
    this.metrics.taken(this.dirty.size, seconds(now - (this.addedAt.get(key) ?? now)));
    this.addedAt.delete(key);
    return key;
  }

  private dispatch(): void {
    while (this.getters.length > 0) {
      const key = this.take();
      if (key === undefined) return;
      this.getters.shift()!(key);
    }
  }

  private armTimer(): void {
    const next = this.nextWaiting();
    if (next === undefined) return;
    if (this.timer !== undefined && this.timerAt <= next.readyAt) return;
    this.timer?.cancel();
    this.timerAt = next.readyAt;
    // Not a schedule: the next key's due time (requeue, backoff), moved as keys come and go.
    this.timer = this.clock.setTimeout(() => this.onTimer(), next.readyAt - this.clock.now());
  }

  private onTimer(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = this.clock.now();
    for (
      let next = this.nextWaiting();
      next !== undefined && next.readyAt <= now;
      next = this.nextWaiting()
    ) {
      heapPop(this.waitingHeap);
      this.waitingReadyAt.delete(next.key);
      this.add(next.key);
    }
    this.armTimer();
  }

  /** The earliest live waiting entry; entries superseded by an earlier addAfter are dropped here. */
  private nextWaiting(): Waiting | undefined {
    while (this.waitingHeap.length > 0) {
      const top = this.waitingHeap[0];
      if (this.waitingReadyAt.get(top.key) === top.readyAt) return top;
      heapPop(this.waitingHeap);
    }
    return undefined;
  }

  private inProgress(): { unfinishedSeconds: number; longestSeconds: number } {
    const now = this.clock.now();
    let unfinished = 0;
    let longest = 0;
    for (const started of this.startedAt.values()) {
      const elapsed = now - started;
      unfinished += elapsed;
      longest = Math.max(longest, elapsed);
    }
    return { unfinishedSeconds: seconds(unfinished), longestSeconds: seconds(longest) };
  }
}

function seconds(ms: number): number {
  return Math.max(0, ms) / 1000;
}

function before(a: Waiting, b: Waiting): boolean {
  return a.readyAt < b.readyAt || (a.readyAt === b.readyAt && a.seq < b.seq);
}

function heapPush(heap: Waiting[], item: Waiting): void {
  heap.push(item);
  let i = heap.length - 1;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (!before(heap[i], heap[parent])) break;
    [heap[parent], heap[i]] = [heap[i], heap[parent]];
    i = parent;
  }
}

function heapPop(heap: Waiting[]): void {
  const last = heap.pop();
  if (last === undefined || heap.length === 0) return;
  heap[0] = last;
  let i = 0;
  for (;;) {
    const l = 2 * i + 1;
    const r = l + 1;
    let smallest = i;
    if (l < heap.length && before(heap[l], heap[smallest])) smallest = l;
    if (r < heap.length && before(heap[r], heap[smallest])) smallest = r;
    if (smallest === i) return;
    [heap[smallest], heap[i]] = [heap[i], heap[smallest]];
    i = smallest;
  }
}
