import type { KeyedStore } from './object-memory';

interface Replaced {
  versions: Set<string>;
  deadline: number;
}

/**
 * Versions of EphemeralRunners this controller has written past, so that a reconcile can tell a
 * cache that has not caught up with the controller's own writes.
 *
 * A reconcile can be woken by another object's event (its pod) before the watch has delivered the
 * controller's last write to the runner. Acting on that older copy repeats the write: the finalizers
 * are added again, a status is patched again. Each such repeat is a wasted API write and a wasted
 * reconcile. When the copy in the cache is one this controller has already replaced, the write's own
 * watch event is still on its way and will wake the reconciler with the current object.
 *
 * Only equality is used: resourceVersions are opaque and must not be compared for order. A version
 * is recorded as replaced only when the write produced a new one (a no-op patch does not), so a
 * runner can never be waited on for an event that will not come; the bound covers an event a
 * predicate drops or a watch that breaks.
 */
export class OwnWrites {
  /** `replaced` is a slot of the controller's ObjectMemory, so forgetting the object forgets this too. */
  constructor(
    private readonly ttlMs = 10_000,
    private readonly now: () => number = Date.now,
    private readonly replaced: KeyedStore<Replaced> = new Map<string, Replaced>(),
  ) {}

  /** The controller read `before` and its write produced `after` ('' when the write deleted it). */
  record(key: string, before: string | undefined, after: string | undefined): void {
    if (!before || after === undefined || before === after) return;
    const entry = this.replaced.get(key) ?? { versions: new Set<string>(), deadline: 0 };
    entry.versions.add(before);
    entry.deadline = this.now() + this.ttlMs;
    this.replaced.set(key, entry);
  }

  /** How long to wait for the cache to catch up, or 0 when `version` is current as far as we know. */
  behindMs(key: string, version: string | undefined): number {
    const entry = this.replaced.get(key);
    if (!entry) return 0;
    const remaining = entry.deadline - this.now();
    if (remaining <= 0 || !version || !entry.versions.has(version)) {
      // The cache moved past every version we replaced (or the bound passed): nothing to excuse.
      if (remaining <= 0 || (version && !entry.versions.has(version))) this.replaced.delete(key);
      return 0;
    }
    return remaining;
  }

  forget(key: string): void {
    this.replaced.delete(key);
  }
}
