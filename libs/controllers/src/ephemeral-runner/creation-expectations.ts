/**
 * Pods this controller created that its cache has not shown yet.
 *
 * The informer cache trails the API server. A reconcile woken by the controller's own earlier write
 * (the finalizer patch, the secret) can run before the watch delivers the pod that write's reconcile
 * created, find no pod, and create it again: a wasted write answered 409, and a 5 s wait. The
 * controllers in kube-controller-manager avoid it the same way ("expectations"): after a create, a
 * cache miss for that name within a bound is taken as lag, not absence. The pod's own watch event
 * wakes the reconciler once it arrives; the bound only matters if it never does (the pod was deleted
 * before it reached the cache), and then the create is simply tried again.
 *
 * In memory on purpose: a restarted controller's cache is listed fresh, so there is no lag to excuse.
 */
export class CreationExpectations {
  private readonly deadlines = new Map<string, number>();

  constructor(
    private readonly ttlMs = 30_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Records that `key` was just created. */
  expect(key: string): void {
    this.deadlines.set(key, this.now() + this.ttlMs);
  }

  /** The cache shows `key`: nothing is awaited any more. */
  observed(key: string): void {
    this.deadlines.delete(key);
  }

  /** How long a cache miss for `key` is still to be taken as lag; 0 when it is real absence. */
  remainingMs(key: string): number {
    const deadline = this.deadlines.get(key);
    if (deadline === undefined) return 0;
    const remaining = deadline - this.now();
    if (remaining <= 0) this.deadlines.delete(key);
    return Math.max(0, remaining);
  }
}
