import type { KubeObject } from '../client/types';
import type { ReconcileContext } from '../controller/types';

/**
 * One reconcile pass of one object: the object as this pass sees it, its queue key, and the pass's
 * abort signal and bound logger. The parts of a reconciler take this one value instead of each
 * threading `obj, key, signal, log` through its signatures; a part that refreshes the object (a
 * write returned a newer copy) hands on `{ ...pass, obj: updated }`.
 */
export interface Pass<T extends KubeObject> extends ReconcileContext {
  readonly obj: T;
  readonly key: string;
}
