import { ExponentialBackoffRateLimiter, type KeyedStore, exponentialBackoffMs } from '@aro/kube';

/** The first wait after a failure a retry cannot fix soon, doubled on each repeat up to the cap. */
export const SLOW_RETRY_BASE_MS = 5_000;
export const SLOW_RETRY_MAX_MS = 5 * 60_000;

/**
 * The wait before the `failures`-th retry of a failure a retry cannot fix soon (a refused credential,
 * an invalid config URL, a corrupt jitconfig secret beside its pod): 5 s, 10 s, 20 s, ... up to
 * 5 min. Slow enough that a wrong credential costs the service one call every few minutes per runner
 * once it has settled, quick enough that a fix made in the first minutes is picked up soon.
 */
export function slowRetryMs(failures: number): number {
  return exponentialBackoffMs(Math.max(1, Math.floor(failures)), SLOW_RETRY_BASE_MS, SLOW_RETRY_MAX_MS);
}

/**
 * Counts, per runner, the consecutive failures a retry cannot fix soon, to space its retries with
 * {@link slowRetryMs} instead of the controller's error backoff (which is shared with every other
 * error and tops out sooner). In memory: a restart begins again at 5 s, which is what a person who
 * just fixed the Secret wants anyway.
 */
export class SlowRetries {
  private readonly failures: ExponentialBackoffRateLimiter;

  /** `store` is a slot of the reconciler's per-runner memory: the count goes when the runner does. */
  constructor(store: KeyedStore<number> = new Map<string, number>()) {
    this.failures = new ExponentialBackoffRateLimiter(SLOW_RETRY_BASE_MS, SLOW_RETRY_MAX_MS, store);
  }

  /** Records one more failure of the runner's and returns how long to wait before the next try. */
  next(runnerKey: string): number {
    return this.failures.when(runnerKey);
  }

  /** The runner got past what was failing: its next failure starts at the base again. */
  reset(runnerKey: string): void {
    this.failures.forget(runnerKey);
  }
}
