import type { ResourceKind } from '@aro/api';
import type { Logger } from '@aro/observability';
import type { KubeObject } from '../client/types';
import { Indexer } from './indexer';

/** A change the store took in: what handlers are told. */
export interface InformerEvent<T> {
  type: 'added' | 'modified' | 'deleted';
  /** For `deleted`, the last state the informer knew. */
  object: T;
  /** For `modified`, the state it replaced. */
  oldObject?: T;
}

/**
 * The objects of one kind an informer holds, by `namespace/name`, with their secondary indexes.
 * Readers get deep copies, so a reconciler that mutates what it read cannot corrupt the store.
 */
export class ObjectStore<T extends KubeObject> {
  private readonly objects = new Map<string, T>();
  private readonly indexer: Indexer<T>;

  constructor(
    private readonly kind: ResourceKind,
    resource: string,
    log: Logger,
  ) {
    this.indexer = new Indexer<T>(resource, log);
  }

  get size(): number {
    return this.objects.size;
  }

  /** The stored objects themselves (not copies): for the informer's own replay to a late handler. */
  values(): IterableIterator<T> {
    return this.objects.values();
  }

  /** A secondary index: `fn` maps an object to the values it is found under by `byIndex(name, value)`. */
  addIndex(name: string, fn: (o: T) => string[]): void {
    this.indexer.add(name, fn, this.objects);
  }

  /** A copy of the object, or undefined. `namespace` is ignored for cluster-scoped kinds. */
  get(namespace: string, name: string): T | undefined {
    const object = this.objects.get(this.key(namespace, name));
    return object === undefined ? undefined : structuredClone(object);
  }

  /** Copies of the objects, all or those of one namespace. */
  list(namespace?: string): T[] {
    const out: T[] = [];
    for (const object of this.objects.values()) {
      if (!namespace || !this.kind.namespaced || object.metadata?.namespace === namespace) {
        out.push(structuredClone(object));
      }
    }
    return out;
  }

  /** Copies of the objects the named index files under `value`. */
  byIndex(name: string, value: string): T[] {
    return [...this.indexer.keys(name, value)].map((key) => structuredClone(this.objects.get(key) as T));
  }

  /**
   * Takes in a fresh list, and says what changed against what was held (what happened while nobody
   * watched). Equal resourceVersions of the same object mean no change (the one comparison that is
   * safe: equality, never order).
   */
  replace(items: readonly T[]): InformerEvent<T>[] {
    const seen = new Set<string>();
    const events: InformerEvent<T>[] = [];
    for (const object of items) {
      const key = this.keyOf(object);
      seen.add(key);
      const old = this.objects.get(key);
      if (old === undefined) {
        this.put(key, object);
        events.push({ type: 'added', object });
      } else if (old.metadata?.resourceVersion !== object.metadata?.resourceVersion) {
        this.put(key, object);
        events.push({ type: 'modified', object, oldObject: old });
      }
    }
    for (const [key, old] of this.objects) {
      if (!seen.has(key)) {
        this.remove(key);
        events.push({ type: 'deleted', object: old });
      }
    }
    return events;
  }

  /** Takes in one watch event's object: stored (added or modified), or removed (deleted). */
  apply(type: 'ADDED' | 'MODIFIED' | 'DELETED', object: T): InformerEvent<T> {
    const key = this.keyOf(object);
    const old = this.objects.get(key);
    if (type === 'DELETED') {
      this.remove(key);
      return { type: 'deleted', object };
    }
    this.put(key, object);
    return old === undefined ? { type: 'added', object } : { type: 'modified', object, oldObject: old };
  }

  private key(namespace: string, name: string): string {
    return `${this.kind.namespaced ? namespace : ''}/${name}`;
  }

  private keyOf(object: T): string {
    return this.key(object.metadata?.namespace ?? '', object.metadata?.name ?? '');
  }

  private put(key: string, object: T): void {
    // managedFields (server-side apply bookkeeping, about a kilobyte a pod) is read by no controller:
    // dropped as the object enters the store, it costs nothing per cached object.
    if (object.metadata?.managedFields) delete object.metadata.managedFields;
    this.objects.set(key, object);
    this.indexer.update(key, object);
  }

  private remove(key: string): void {
    this.objects.delete(key);
    this.indexer.delete(key);
  }
}
