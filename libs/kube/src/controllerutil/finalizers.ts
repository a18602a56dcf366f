import type { KubeObject } from '../client/types';

/*
 * The finalizer list of an object, as controller-runtime's controllerutil: pure functions on the list,
 * and the one patch that writes it.
 */

export function hasFinalizer(obj: KubeObject, finalizer: string): boolean {
  return obj.metadata?.finalizers?.includes(finalizer) ?? false;
}

/** The object's finalizers with these added (unchanged order, each once). */
export function withFinalizers(obj: KubeObject, ...finalizers: string[]): string[] {
  const current = obj.metadata?.finalizers ?? [];
  const missing = finalizers.filter((f, i) => !current.includes(f) && finalizers.indexOf(f) === i);
  return missing.length === 0 ? current : [...current, ...missing];
}

/** The object's finalizers with these removed. */
export function withoutFinalizers(obj: KubeObject, ...finalizers: string[]): string[] {
  return (obj.metadata?.finalizers ?? []).filter((f) => !finalizers.includes(f));
}

export interface FinalizersPatchOptions {
  /**
   * Carry the resourceVersion read, so the server refuses (409) a write over a newer object. On by
   * default: a merge patch replaces a list as a whole, so without the guard a finalizer another
   * writer added since the read would be dropped.
   */
  optimisticLock?: boolean;
}

/** The merge patch that sets the object's finalizer list to `finalizers`. */
export function finalizersPatch(
  obj: KubeObject,
  finalizers: readonly string[],
  { optimisticLock = true }: FinalizersPatchOptions = {},
): object {
  return {
    metadata: optimisticLock
      ? { finalizers, resourceVersion: obj.metadata?.resourceVersion }
      : { finalizers },
  };
}

/**
 * Removes the finalizer from `obj` in place (a copy being prepared for a patch), as controllerutil's
 * RemoveFinalizer. True when it was there.
 */
export function removeFinalizer(obj: KubeObject, finalizer: string): boolean {
  if (!hasFinalizer(obj, finalizer)) return false;
  obj.metadata = { ...obj.metadata, finalizers: withoutFinalizers(obj, finalizer) };
  return true;
}
