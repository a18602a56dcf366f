import type { Logger } from '@aro/observability';

/** Which object to reconcile. Only the name: the reconciler reads the current state itself. */
export interface Request {
  /** '' for a cluster-scoped object. */
  namespace: string;
  name: string;
}

/**
 * What the reconciler wants next. Nothing set: done until the next event. `requeueAfterMs`: look again
 * after that long (and the key's backoff is cleared, since this is not a failure). `requeue`: look
 * again after the key's backoff, as for an error but without logging one.
 */
export interface Result {
  requeueAfterMs?: number;
  requeue?: boolean;
}

/** Nothing more to do until the next event. Frozen: one shared value no caller can change. */
export const done: Result = Object.freeze({});

/** Look again after the key's backoff, as for an error but without logging one. */
export function requeue(): Result {
  return { requeue: true };
}

/**
 * Look again in `ms`, rounded up to a whole millisecond and at least 1. Every wait is computed
 * (a deadline minus now), and one that came out 0 or a fraction would otherwise be read by the
 * controller as "no requeue" (it requeues only on a positive wait) and the object would not be looked
 * at again until some unrelated event: a wait that is due is due now, never never.
 */
export function requeueAfter(ms: number): Result {
  return { requeueAfterMs: Math.max(1, Math.ceil(ms)) };
}

/** The result that comes back first: an immediate requeue, else the shorter wait, else done. */
export function sooner(a: Result, b: Result): Result {
  if (a.requeue && a.requeueAfterMs === undefined) return a;
  if (a.requeueAfterMs === undefined) return b;
  if (b.requeueAfterMs === undefined) return a;
  return a.requeueAfterMs <= b.requeueAfterMs ? a : b;
}

export interface ReconcileContext {
  /**
   * Aborted when the reconcile must stop at once: leadership was lost (another replica may already be
   * writing), the shutdown deadline passed, or the controller's reconcile timeout expired. Pass it on
   * to every call that can wait.
   */
  signal: AbortSignal;
  /** Bound to controller, namespace, name and reconcileID. */
  log: Logger;
}

/**
 * Brings one object's world in line with its spec. Must be idempotent and level-based: it is called
 * with a name only, possibly many times for one change, and possibly once for many changes.
 * A thrown error is retried with per-key exponential backoff.
 */
export interface Reconciler {
  reconcile(req: Request, ctx: ReconcileContext): Promise<Result>;
}

/** The queue key, as client-go's MetaNamespaceKeyFunc: `namespace/name`, or `name` when cluster-scoped. */
export function requestKey(req: Request): string {
  return req.namespace === '' ? req.name : `${req.namespace}/${req.name}`;
}

export function requestFromKey(key: string): Request {
  const slash = key.indexOf('/');
  return slash < 0
    ? { namespace: '', name: key }
    : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
