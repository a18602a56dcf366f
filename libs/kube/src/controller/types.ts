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

export function done(): Result {
  return {};
}

export function requeue(): Result {
  return { requeue: true };
}

export function requeueAfter(ms: number): Result {
  return { requeueAfterMs: ms };
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
