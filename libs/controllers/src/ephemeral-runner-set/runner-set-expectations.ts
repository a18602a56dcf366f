import type { EphemeralRunner } from '@aro/api';

/**
 * Runners this controller created or deleted that its cache does not show that way yet.
 *
 * A set counts its runners from the informer cache, which trails the API server. A pass right after
 * one that created five runners may still see none of them and create five more; one right after a
 * scale-down may still count the deleted runners and delete others. So each pass records what it did,
 * and the next one waits (requeue) until the cache shows it, as kube-controller-manager's ReplicaSet
 * controller does. The bound only matters if an event never comes (the object went away first).
 */
export class RunnerSetExpectations {
  private readonly entries = new Map<
    string,
    { creates: Set<string>; deletes: Set<string>; deadline: number }
  >();

  constructor(
    private readonly ttlMs = 30_000,
    private readonly now: () => number = Date.now,
  ) {}

  created(setKey: string, runnerName: string): void {
    this.entry(setKey).creates.add(runnerName);
  }

  deleted(setKey: string, runnerName: string): void {
    this.entry(setKey).deletes.add(runnerName);
  }

  /** How long to wait for the cache (ms), or 0 when it shows everything this controller did. */
  pendingMs(setKey: string, runners: readonly EphemeralRunner[]): number {
    const entry = this.entries.get(setKey);
    if (!entry) return 0;
    const remaining = entry.deadline - this.now();
    if (remaining <= 0) {
      this.entries.delete(setKey);
      return 0;
    }
    const byName = new Map(runners.map((r) => [r.metadata?.name ?? '', r]));
    for (const name of entry.creates) if (byName.has(name)) entry.creates.delete(name);
    for (const name of entry.deletes) {
      const runner = byName.get(name);
      if (!runner || runner.metadata?.deletionTimestamp) entry.deletes.delete(name);
    }
    if (entry.creates.size === 0 && entry.deletes.size === 0) {
      this.entries.delete(setKey);
      return 0;
    }
    return remaining;
  }

  forget(setKey: string): void {
    this.entries.delete(setKey);
  }

  private entry(setKey: string) {
    let entry = this.entries.get(setKey);
    if (!entry) {
      entry = { creates: new Set(), deletes: new Set(), deadline: 0 };
      this.entries.set(setKey, entry);
    }
    entry.deadline = this.now() + this.ttlMs;
    return entry;
  }
}
