import type { KubeObject } from '../client/types';
import type { KeyedStore } from './object-memory';

interface Expected {
  creates: Set<string>;
  deletes: Set<string>;
  deadline: number;
}

/**
 * Objects a controller created or deleted that its informer cache does not show that way yet, per
 * owner (kube-controller-manager's "expectations").
 *
 * The cache trails the API server. A pass right after one that created objects may not see them and
 * create them again (a wasted write answered 409, or, for a set counting its members, twice the
 * members); one right after a deletion may still count the deleted object and delete another. So a
 * pass records what it wrote, and the next waits until the cache shows it. The object's own watch
 * event wakes the controller once it arrives; the bound (`ttlMs` from the last write recorded) only
 * matters if it never does (the object went away first), and then the pass simply acts again.
 *
 * In memory on purpose: a restarted controller's cache is listed fresh, so there is no lag to excuse.
 */
export class Expectations {
  /** `owners` is a slot of the controller's ObjectMemory, so forgetting the owner forgets this too. */
  constructor(
    private readonly ttlMs = 30_000,
    private readonly now: () => number = Date.now,
    private readonly owners: KeyedStore<Expected> = new Map<string, Expected>(),
  ) {}

  /** `ownerKey`'s pass created the object `name`. */
  expectCreation(ownerKey: string, name: string): void {
    this.entry(ownerKey).creates.add(name);
  }

  /** `ownerKey`'s pass deleted the object `name`. */
  expectDeletion(ownerKey: string, name: string): void {
    this.entry(ownerKey).deletes.add(name);
  }

  /**
   * How long to wait for the cache (ms), given the objects it shows now, or 0 when it shows every
   * creation (the object is there) and deletion (gone, or marked for deletion) recorded for the owner.
   */
  pendingMs(ownerKey: string, seen: readonly KubeObject[]): number {
    const entry = this.owners.get(ownerKey);
    if (!entry) return 0;
    const remaining = entry.deadline - this.now();
    if (remaining <= 0) {
      this.owners.delete(ownerKey);
      return 0;
    }
    const byName = new Map(seen.map((o) => [o.metadata?.name ?? '', o]));
    for (const name of entry.creates) if (byName.has(name)) entry.creates.delete(name);
    for (const name of entry.deletes) {
      const obj = byName.get(name);
      if (!obj || obj.metadata?.deletionTimestamp) entry.deletes.delete(name);
    }
    if (entry.creates.size === 0 && entry.deletes.size === 0) {
      this.owners.delete(ownerKey);
      return 0;
    }
    return remaining;
  }

  forget(ownerKey: string): void {
    this.owners.delete(ownerKey);
  }

  private entry(ownerKey: string) {
    let entry = this.owners.get(ownerKey);
    if (!entry) {
      entry = { creates: new Set(), deletes: new Set(), deadline: 0 };
      this.owners.set(ownerKey, entry);
    }
    entry.deadline = this.now() + this.ttlMs;
    return entry;
  }
}
