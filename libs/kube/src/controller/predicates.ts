import type { KubeObject } from '../client';

/**
 * Filters watch events before they reach the queue. A missing method lets that kind of event through.
 * On an update, `oldObj` is undefined when the informer could not say what the object was before.
 */
export interface Predicate<T extends KubeObject = KubeObject> {
  create?(obj: T): boolean;
  update?(oldObj: T | undefined, newObj: T): boolean;
  delete?(obj: T): boolean;
}

/**
 * Drops updates that do not change the resourceVersion: the resync and relist replays of an object
 * already seen. Each such event would otherwise cost a reconcile that can find nothing new.
 * An update whose old object is unknown passes: without it there is no telling that nothing changed.
 */
export const resourceVersionChangedPredicate: Predicate = {
  update(oldObj, newObj) {
    if (oldObj === undefined) return true;
    return oldObj.metadata?.resourceVersion !== newObj.metadata?.resourceVersion;
  },
};

/**
 * Drops updates that leave metadata.generation alone, i.e. changes to status or metadata only. Only for
 * kinds whose reconciler reacts to spec alone; kinds without a generation (ConfigMap, Secret) would
 * see every update dropped.
 */
export const generationChangedPredicate: Predicate = {
  update(oldObj, newObj) {
    if (oldObj === undefined) return true;
    return oldObj.metadata?.generation !== newObj.metadata?.generation;
  },
};

/** A predicate from a single test applied to every event (the object after an update). */
export function objectPredicate<T extends KubeObject>(test: (obj: T) => boolean): Predicate<T> {
  return { create: test, update: (_old, obj) => test(obj), delete: test };
}
