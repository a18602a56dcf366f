import { BackoffPolicies, defaultBackoffPolicies } from './failures';

/**
 * The listener's timings. config.json does not carry them (upstream has none of these knobs); the
 * defaults suit the real service, and tests shorten them.
 */
export interface ListenerTuning {
  /** Per-attempt deadline of every Actions call but the long poll. */
  requestTimeoutMs: number;
  /** Per-attempt deadline of the long poll, which the service holds ~50 s. */
  longPollTimeoutMs: number;
  /** Retries of one Actions call (the client's own, with Retry-After honoured on 429/503). */
  maxRetries: number;
  backoff: BackoffPolicies;
  /** Refresh a queue token that tells its expiry this long before it. */
  queueTokenRefreshMarginMs: number;
  /** EphemeralRunner status patches per second, and the burst above it. */
  bookkeepingQps: number;
  bookkeepingBurst: number;
  /**
   * /healthz fails once the poll loop has not finished an iteration for this long. Default: the
   * longest a sound iteration can take (every attempt of a long poll timing out, the waits between
   * them, and the longest backoff) plus a minute.
   */
  healthStallMs?: number;
  /** Time for shutdown: draining status patches, then deleting the session. Within the pod's grace period. */
  shutdownTimeoutMs: number;
}

export const defaultListenerTuning: ListenerTuning = {
  requestTimeoutMs: 30_000,
  longPollTimeoutMs: 90_000,
  maxRetries: 4,
  backoff: defaultBackoffPolicies,
  queueTokenRefreshMarginMs: 60_000,
  bookkeepingQps: 10,
  bookkeepingBurst: 20,
  shutdownTimeoutMs: 20_000,
};

export function resolveTuning(partial: Partial<ListenerTuning> = {}): Required<ListenerTuning> {
  const t = { ...defaultListenerTuning, ...partial };
  const retryWaitsMs = Array.from({ length: t.maxRetries }, (_, i) => Math.min(30_000, 1000 * 2 ** i) * 1.25);
  const longestBackoff = Math.max(...Object.values(t.backoff).map((p) => p.maxMs * 1.2));
  const healthStallMs =
    t.healthStallMs ??
    (t.maxRetries + 1) * t.longPollTimeoutMs +
      retryWaitsMs.reduce((a, b) => a + b, 0) +
      longestBackoff +
      60_000;
  return { ...t, healthStallMs };
}
