import { exponentialBackoffMs } from '@aro/kube';

/** The first step of the schedule; tests shrink it, as upstream's suite does, to keep runs short. */
export const DEFAULT_FAILURE_BACKOFF_BASE_MS = 5_000;

/**
 * How long a runner whose pod failed waits before its next pod is created: nothing after the first
 * failure, then 5 s doubling (5, 10, 20, 40, 80 s for the default limit of five), measured from the
 * last failure. Past 80 s it keeps doubling, so a limit raised by a platform team whose nodes churn
 * (upstream's limit of five is spent by spot reclaims and consolidation alone) still spaces out its
 * retries instead of hammering a broken image.
 */
export function failureBackoffMs(failures: number, baseMs = DEFAULT_FAILURE_BACKOFF_BASE_MS): number {
  // Capped so that an absurd limit cannot overflow into a timer Node refuses (max ~24.8 days).
  return exponentialBackoffMs(failures, baseMs, 24 * 60 * 60 * 1000);
}

/** The default number of pod failures after which the EphemeralRunner is recreated, as upstream. */
export const DEFAULT_MAX_FAILURES = 5;
