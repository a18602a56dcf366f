import type { Logger } from '@aro/observability';

interface Index<T> {
  fn: (o: T) => string[];
  byValue: Map<string, Set<string>>;
  valuesByKey: Map<string, string[]>;
}

/**
 * Secondary indexes over a store's keys: each named index maps an object to the values it is found
 * under, and keeps both directions so an object moved or removed leaves no stale entry behind.
 */
export class Indexer<T> {
  private readonly indexes = new Map<string, Index<T>>();

  constructor(
    private readonly resource: string,
    private readonly log: Logger,
  ) {}

  /** Adds the index `name` and files every object of `existing` under it. */
  add(name: string, fn: (o: T) => string[], existing: Iterable<[string, T]>): void {
    if (this.indexes.has(name)) throw new Error(`Informer for ${this.resource} already has index ${name}`);
    const index: Index<T> = { fn, byValue: new Map(), valuesByKey: new Map() };
    this.indexes.set(name, index);
    for (const [key, object] of existing) this.file(index, key, object);
  }

  /** Files `object` (stored under `key`) afresh under every index. */
  update(key: string, object: T): void {
    for (const index of this.indexes.values()) this.file(index, key, object);
  }

  delete(key: string): void {
    for (const index of this.indexes.values()) this.unfile(index, key);
  }

  /** The keys the named index files under `value`. */
  keys(name: string, value: string): ReadonlySet<string> {
    const index = this.indexes.get(name);
    if (!index) throw new Error(`Informer for ${this.resource} has no index ${name}`);
    return index.byValue.get(value) ?? new Set<string>();
  }

  private file(index: Index<T>, key: string, object: T): void {
    this.unfile(index, key);
    let values: string[];
    try {
      values = index.fn(object);
    } catch (err) {
      // One odd object must not take the informer down; it is just not findable through this index.
      this.log.error('An index function threw; the object is left out of the index', err, { key });
      values = [];
    }
    index.valuesByKey.set(key, values);
    for (const value of values) {
      let keys = index.byValue.get(value);
      if (!keys) index.byValue.set(value, (keys = new Set()));
      keys.add(key);
    }
  }

  private unfile(index: Index<T>, key: string): void {
    for (const value of index.valuesByKey.get(key) ?? []) {
      const keys = index.byValue.get(value);
      keys?.delete(key);
      if (keys?.size === 0) index.byValue.delete(value);
    }
    index.valuesByKey.delete(key);
  }
}
