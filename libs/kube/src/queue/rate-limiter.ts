import type { KeyedStore } from '../controllerutil/object-memory';
import { Clock, systemClock } from './clock';

/**
 * The wait before attempt `attempt` (counting from 1) of something that keeps failing: `baseMs`,
 * doubling per attempt, capped at `maxMs`; 0 before the first. Every backoff of the operator is this
 * one curve, so one failing object never hammers what it calls, and a reader learns one rule.
 */
export function exponentialBackoffMs(attempt: number, baseMs: number, maxMs: number): number {
  if (attempt <= 0) return 0;
  // Capped exponent: 2^1023 is the last finite power, and base * Infinity is NaN when base is 0.
  return Math.min(maxMs, baseMs * 2 ** Math.min(attempt - 1, 1000));
}

/**
 * How long a key waits before it is retried (client-go's `workqueue.RateLimiter`). `when` both answers
 * and records the attempt; `forget` clears a key's history once it has been handled successfully.
 */
export interface RateLimiter {
  when(key: string): number;
  forget(key: string): void;
  numRequeues(key: string): number;
}

/**
 * Per-key exponential backoff: `baseMs * 2^failures`, capped at `maxMs`. Keeps one failing object from
 * hammering the API server while every other key proceeds at full speed.
 */
export class ExponentialBackoffRateLimiter implements RateLimiter {
  /** `failures` may be a slot of a controller's ObjectMemory, so forgetting the object resets it. */
  constructor(
    private readonly baseMs = 5,
    private readonly maxMs = 1_000_000,
    private readonly failures: KeyedStore<number> = new Map<string, number>(),
  ) {}

  when(key: string): number {
    const attempt = (this.failures.get(key) ?? 0) + 1;
    this.failures.set(key, attempt);
    return exponentialBackoffMs(attempt, this.baseMs, this.maxMs);
  }

  forget(key: string): void {
    this.failures.delete(key);
  }

  numRequeues(key: string): number {
    return this.failures.get(key) ?? 0;
  }
}

/**
 * An overall token bucket (`qps` refill, `burst` capacity) shared by every key. Like Go's
 * `rate.Limiter.Reserve`, a retry always gets a slot: when the bucket is empty the token is borrowed
 * and the answer is how long until it would have been there, so retries queue up in order rather than
 * being refused. This bounds the retry rate when many keys fail at once (an API server outage).
 */
export class TokenBucketRateLimiter implements RateLimiter {
  private tokens: number;
  private last: number;

  constructor(
    private readonly qps = 10,
    private readonly burst = 100,
    private readonly clock: Clock = systemClock,
  ) {
    this.tokens = burst;
    this.last = clock.now();
  }

  when(): number {
    const now = this.clock.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens / this.qps) * 1000;
  }

  forget(): void {
    // The bucket is shared by every key; there is no per-key history to clear.
  }

  numRequeues(): number {
    return 0;
  }
}

/** The longest wait any of the limiters asks for. */
export class MaxOfRateLimiter implements RateLimiter {
  private readonly limiters: readonly RateLimiter[];

  constructor(...limiters: RateLimiter[]) {
    this.limiters = limiters;
  }

  when(key: string): number {
    // Every limiter must record the attempt, so no short-circuit.
    return this.limiters.reduce((longest, l) => Math.max(longest, l.when(key)), 0);
  }

  forget(key: string): void {
    for (const l of this.limiters) l.forget(key);
  }

  numRequeues(key: string): number {
    return this.limiters.reduce((most, l) => Math.max(most, l.numRequeues(key)), 0);
  }
}

/** controller-runtime's default: 5 ms doubling to 1000 s per key, and 10/s with a burst of 100 overall. */
export function defaultControllerRateLimiter(clock: Clock = systemClock): RateLimiter {
  return new MaxOfRateLimiter(
    new ExponentialBackoffRateLimiter(5, 1_000_000),
    new TokenBucketRateLimiter(10, 100, clock),
  );
}
