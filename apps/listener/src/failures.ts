import { isActionsError } from '@aro/actions/lean';

/**
 * What a failed Actions call means for the listener, which decides how long to wait and what to log.
 * - `conflict`: another session holds the scale set (an unclean shutdown, a second cluster); it goes
 *   stale after a while, so keep trying, slowly.
 * - `session-gone`: the service no longer knows our session (404, "session expired/deleted"): make a
 *   new one, keeping the last message id.
 * - `queue-token-expired`: 401 on the message queue: refresh the session and go on at once.
 * - `unauthorized`: 401/403 on an admin call: credentials revoked or lacking a permission; only a person
 *   can fix it, so back off long and say so.
 * - `rate-limited`: 429 (the client already waited what Retry-After asked between its attempts).
 * - `transient`: anything else (5xx, resets, timeouts).
 */
export type FailureKind =
  'conflict' | 'session-gone' | 'queue-token-expired' | 'unauthorized' | 'rate-limited' | 'transient';

export function classifyFailure(err: unknown): FailureKind {
  if (!isActionsError(err)) return 'transient';
  if (err.kind === 'SessionConflict') return 'conflict';
  if (err.kind === 'MessageQueueTokenExpired') return 'queue-token-expired';
  // Every call the listener makes names its session, so a 404 means the session is what is gone.
  if (err.kind === 'SessionGone' || err.statusCode === 404) return 'session-gone';
  if (err.kind === 'Unauthorized') return 'unauthorized';
  if (err.kind === 'RateLimited') return 'rate-limited';
  return 'transient';
}

export interface BackoffPolicy {
  initialMs: number;
  maxMs: number;
}

/** How long each kind of failure waits at first; every repeat doubles it up to the kind's max. */
export interface BackoffPolicies {
  conflict: BackoffPolicy;
  unauthorized: BackoffPolicy;
  rateLimited: BackoffPolicy;
  transient: BackoffPolicy;
}

export const defaultBackoffPolicies: BackoffPolicies = {
  // A stale session expires after minutes; polling the create faster than this only adds 409s.
  conflict: { initialMs: 5_000, maxMs: 60_000 },
  unauthorized: { initialMs: 30_000, maxMs: 300_000 },
  rateLimited: { initialMs: 10_000, maxMs: 300_000 },
  transient: { initialMs: 1_000, maxMs: 60_000 },
};

export function policyFor(kind: FailureKind, p: BackoffPolicies): BackoffPolicy {
  switch (kind) {
    case 'conflict':
      return p.conflict;
    case 'unauthorized':
      return p.unauthorized;
    case 'rate-limited':
      return p.rateLimited;
    default:
      return p.transient;
  }
}

/**
 * Consecutive failures of one loop, and the wait each earns: initial · 2^(n-1) capped, with up to
 * +20 % jitter so listeners that failed together (a service outage) do not come back together.
 */
export class Backoff {
  private failures = 0;

  constructor(
    private readonly policies: BackoffPolicies,
    private readonly random: () => number = Math.random,
  ) {}

  get consecutiveFailures(): number {
    return this.failures;
  }

  next(kind: FailureKind): number {
    this.failures++;
    const p = policyFor(kind, this.policies);
    const base = Math.min(p.maxMs, p.initialMs * 2 ** Math.min(30, this.failures - 1));
    return Math.min(p.maxMs, Math.round(base * (1 + 0.2 * this.random())));
  }

  reset(): void {
    this.failures = 0;
  }
}
