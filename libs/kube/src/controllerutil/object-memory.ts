/** A map-shaped view of one kind of per-object state; a plain `Map` is one too. */
export interface KeyedStore<V> {
  get(key: string): V | undefined;
  has(key: string): boolean;
  set(key: string, value: V): unknown;
  delete(key: string): boolean;
}

/**
 * Everything a controller remembers of each object it reconciles (cache-lag expectations, its own
 * writes, backoffs, what it published), in one place with one `forget`.
 *
 * Each part of a controller takes a {@link KeyedStore} slot of it instead of a map of its own. Per-key
 * maps each with a hand-written forget leak as soon as one forget is missed on one path (an object
 * gone without its deletion being seen, a cleanup that released it); here the object's entry holds
 * every slot's value, so dropping the entry drops them all. A slot whose value stands for something
 * outside memory (a published metric series) gives `onForget`, which runs as the entry goes.
 */
export class ObjectMemory {
  private readonly objects = new Map<string, Map<MemorySlot<unknown>, unknown>>();
  private readonly releases: Array<(key: string) => void> = [];

  /** A store for one part's state of each object, cleared with the rest by {@link forget}. */
  slot<V>(name: string, onForget?: (key: string, value: V) => void): KeyedStore<V> {
    return new MemorySlot<V>(name, this.objects, onForget);
  }

  /**
   * State kept outside this memory for each object (a metrics registry's series), released by the same
   * {@link forget}: registered once when the controller is built, not repeated on each path.
   */
  onForget(release: (key: string) => void): void {
    this.releases.push(release);
  }

  /** Drops everything remembered of `key`, releasing what the slots' and `onForget`'s callbacks name. */
  forget(key: string): void {
    const entry = this.objects.get(key);
    this.objects.delete(key);
    for (const [slot, value] of entry ?? []) slot.release(key, value);
    for (const release of this.releases) release(key);
  }

  /** How many objects something is remembered of (a leak shows here). */
  get size(): number {
    return this.objects.size;
  }
}

class MemorySlot<V> implements KeyedStore<V> {
  constructor(
    readonly name: string,
    private readonly objects: Map<string, Map<MemorySlot<unknown>, unknown>>,
    private readonly onForget?: (key: string, value: V) => void,
  ) {}

  get(key: string): V | undefined {
    return this.objects.get(key)?.get(this as MemorySlot<unknown>) as V | undefined;
  }

  has(key: string): boolean {
    return this.objects.get(key)?.has(this as MemorySlot<unknown>) ?? false;
  }

  set(key: string, value: V): this {
    let entry = this.objects.get(key);
    if (!entry) {
      entry = new Map();
      this.objects.set(key, entry);
    }
    entry.set(this as MemorySlot<unknown>, value);
    return this;
  }

  delete(key: string): boolean {
    const entry = this.objects.get(key);
    if (!entry?.delete(this as MemorySlot<unknown>)) return false;
    if (entry.size === 0) this.objects.delete(key);
    return true;
  }

  release(key: string, value: unknown): void {
    this.onForget?.(key, value as V);
  }
}
