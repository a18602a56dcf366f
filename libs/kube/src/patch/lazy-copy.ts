import { createMergePatch } from './merge-patch';

export interface MergePatchOptions {
  /**
   * Carry the original's `metadata.resourceVersion` in the patch so the server rejects it with a 409
   * Conflict when the object changed since it was read (controller-runtime's MergeFromWithOptimisticLock).
   */
  optimisticLock?: boolean;
}

/**
 * An object read once and changed perhaps: the deep copy that a merge patch needs as its base is made
 * only on the first `mutate()`, so a reconcile that ends up changing nothing pays no copy and sends no
 * request. The original is never written to; it stays the base of the patch.
 */
export class LazyCopy<T extends object> {
  private copy: T | undefined;

  constructor(private readonly original: T) {}

  /** The object as it stands now: the copy once mutated, else the original. Read only. */
  get current(): T {
    return this.copy ?? this.original;
  }

  /** The object to change; the deep copy is made on the first call and reused after. */
  mutate(): T {
    this.copy ??= structuredClone(this.original);
    return this.copy;
  }

  /** True when the changes made through `mutate()` amount to a non-empty patch. */
  get changed(): boolean {
    return this.mergePatch() !== undefined;
  }

  /** The merge patch from the original to the current state, or `undefined` when there is nothing to send. */
  mergePatch(opts: MergePatchOptions = {}): object | undefined {
    if (this.copy === undefined) return undefined;
    const patch = createMergePatch(this.original, this.copy) as Record<string, unknown> | undefined;
    if (patch === undefined || !opts.optimisticLock) return patch;
    const resourceVersion = (this.original as { metadata?: { resourceVersion?: string } }).metadata
      ?.resourceVersion;
    if (resourceVersion === undefined) {
      throw new Error('An optimistic-lock merge patch needs metadata.resourceVersion on the original object');
    }
    const metadata = (patch.metadata as Record<string, unknown> | undefined) ?? {};
    return { ...patch, metadata: { ...metadata, resourceVersion } };
  }
}
