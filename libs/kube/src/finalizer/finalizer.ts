import type { ResourceKind } from '@aro/api';
import type { KubeApi } from '../client/kube-api';
import type { KubeObject, Reader } from '../client/types';
import { isNotFound } from '../client/errors';
import { type ReconcileContext, type Request, type Result, requestKey } from '../controller/types';
import type { ObjectMemory } from '../controllerutil/object-memory';
import type { Pass } from '../controllerutil/pass';
import { getIgnoringNotFound } from '../controllerutil/not-found';
import {
  finalizersPatch,
  hasFinalizer,
  withFinalizers,
  withoutFinalizers,
} from '../controllerutil/finalizers';

/**
 * Where an object stands with respect to a controller's finalizer, which decides what a reconcile does:
 * - `add`: live, and the finalizer (or one it comes with) is missing: add it before acting;
 * - `apply`: live and finalized: drive it towards its spec;
 * - `cleanup`: being deleted with the finalizer on: release what it holds, then drop the finalizer;
 * - `gone`: being deleted and the finalizer already dropped: nothing left for this controller.
 */
export type FinalizerState = 'add' | 'apply' | 'cleanup' | 'gone';

/** The finalizer a controller owns, and others it adds in the same write (released on their own). */
export interface FinalizerNames {
  name: string;
  also?: readonly string[];
  /**
   * Other names of the same finalizer, written by another version of the controller (upstream's
   * releases renamed some). An object carrying one is this controller's to clean up, and releasing it
   * removes them all: the other version removes only its own name, so one left behind would keep the
   * object Terminating for ever. A live object gets `name` in their place, so the object carries the
   * one name the controller that may take it back knows.
   */
  aliases?: readonly string[];
  /**
   * Whether the finalizer writes carry the resourceVersion read (see {@link finalizersPatch}); on by
   * default. Off only where the controller knows its copy is current by other means (own-write
   * tracking) and a 409 would cost a pass for nothing.
   */
  optimisticLock?: boolean;
}

export function finalizerState(obj: KubeObject, names: FinalizerNames): FinalizerState {
  const aliases = names.aliases ?? [];
  if (obj.metadata?.deletionTimestamp) {
    return [names.name, ...aliases].some((f) => hasFinalizer(obj, f)) ? 'cleanup' : 'gone';
  }
  const complete = [names.name, ...(names.also ?? [])].every((f) => hasFinalizer(obj, f));
  return complete && !aliases.some((f) => hasFinalizer(obj, f)) ? 'apply' : 'add';
}

/** A cleanup that finished: the finalizer goes, with any of `alsoRemove` still on the object. */
export interface Released {
  readonly released: true;
  readonly alsoRemove: readonly string[];
}

export function released(alsoRemove: readonly string[] = []): Released {
  return { released: true, alsoRemove };
}

function isReleased(value: Result | Released): value is Released {
  return (value as Released).released === true;
}

export interface FinalizerHandlers<T extends KubeObject> {
  /** A live object that carries the finalizers. */
  apply(obj: T): Promise<Result>;
  /**
   * An object being deleted that still carries the finalizer. Return {@link released} once everything
   * it held is released, or a Result (requeue) to keep the finalizer and look again.
   */
  cleanup(obj: T): Promise<Result | Released>;
}

/**
 * Writes a finalizer change: `patch` is a merge patch of `metadata.finalizers` computed from `obj` as
 * read. The controller's own patch function, so its bookkeeping (own-write tracking) sees the write.
 * A writer that removes may throw NotFound: an object already gone counts as released. Under
 * {@link reconcileFinalized} it is also given the pass, for its logger.
 */
export type FinalizerWriter<T extends KubeObject> = (
  obj: T,
  patch: object,
  step: 'add' | 'remove',
  pass?: ReconcileContext,
) => Promise<T>;

/** The usual writer: the patch, as a merge patch of the object through `client`. */
export function patchingFinalizers<T extends KubeObject>(
  client: Pick<KubeApi, 'mergePatch'>,
  kind: ResourceKind,
): FinalizerWriter<T> {
  return (obj, patch) =>
    client.mergePatch<T>(kind, obj.metadata?.namespace ?? '', obj.metadata?.name ?? '', patch);
}

/**
 * The finalizer state machine, as kube-rs's `finalizer()`: one call per reconcile decides from
 * {@link finalizerState} whether to add the finalizer, apply, clean up, or do nothing.
 *
 * Two choices differ from kube-rs, both to save API calls on the hot path. Adding the finalizer does
 * not end the reconcile: `apply` runs at once on the patched object (its own event comes back and
 * finds nothing to do). And the finalizers a cleanup asks to drop with the main one go in the same
 * write. Removing the finalizer of an object that is already gone counts as done.
 */
export async function finalizer<T extends KubeObject>(
  names: FinalizerNames,
  obj: T,
  write: FinalizerWriter<T>,
  handlers: FinalizerHandlers<T>,
): Promise<Result> {
  switch (finalizerState(obj, names)) {
    case 'gone':
      return {};
    case 'apply':
      return handlers.apply(obj);
    case 'add': {
      // An alias is replaced in the same write (see FinalizerNames.aliases).
      const finalizers = withFinalizers(obj, names.name, ...(names.also ?? [])).filter(
        (f) => !(names.aliases ?? []).includes(f),
      );
      const patch = finalizersPatch(obj, finalizers, { optimisticLock: names.optimisticLock });
      return handlers.apply(await write(obj, patch, 'add'));
    }
    case 'cleanup': {
      const outcome = await handlers.cleanup(obj);
      if (!isReleased(outcome)) return outcome;
      const finalizers = withoutFinalizers(obj, names.name, ...(names.aliases ?? []), ...outcome.alsoRemove);
      try {
        await write(
          obj,
          finalizersPatch(obj, finalizers, { optimisticLock: names.optimisticLock }),
          'remove',
        );
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      return {};
    }
  }
}

/** What {@link reconcileFinalized} needs of a controller whose object carries its finalizer. */
export interface FinalizedObjectSpec<T extends KubeObject> {
  reader: Pick<Reader, 'get'>;
  kind: ResourceKind;
  finalizer: FinalizerNames;
  write: FinalizerWriter<T>;
  /**
   * Everything the controller remembers of its objects. The object's entry is forgotten once the
   * object is gone from the cache and once its cleanup released it, so no per-key state outlives it.
   */
  memory: Pick<ObjectMemory, 'forget'>;
  /**
   * Looked at before the finalizer decides anything: a Result ends the pass there (the cached object
   * predates the controller's own last write, or the controller refuses it); undefined goes on.
   */
  admit?(pass: Pass<T>): Promise<Result | undefined>;
  /** A live object that carries the finalizers. */
  apply(pass: Pass<T>): Promise<Result>;
  /** An object being deleted that still carries the finalizer (see {@link FinalizerHandlers.cleanup}). */
  cleanup(pass: Pass<T>): Promise<Result | Released>;
}

/**
 * The opening every finalizing reconciler shares: read the object from the cache (absent: forget it,
 * done), then {@link finalizer} with the pass's object, forgetting it once its cleanup released it.
 */
export async function reconcileFinalized<T extends KubeObject>(
  req: Request,
  ctx: ReconcileContext,
  spec: FinalizedObjectSpec<T>,
): Promise<Result> {
  const key = requestKey(req);
  const obj = await getIgnoringNotFound<T>(spec.reader, spec.kind, req.namespace, req.name);
  if (!obj) {
    spec.memory.forget(key);
    return {};
  }
  const passOf = (current: T): Pass<T> => ({ obj: current, key, signal: ctx.signal, log: ctx.log });
  const admitted = await spec.admit?.(passOf(obj));
  if (admitted) return admitted;
  const write: FinalizerWriter<T> = (current, patch, step) => spec.write(current, patch, step, ctx);
  return finalizer(spec.finalizer, obj, write, {
    apply: (live) => spec.apply(passOf(live)),
    cleanup: async (deleting) => {
      const outcome = await spec.cleanup(passOf(deleting));
      if (isReleased(outcome)) spec.memory.forget(key);
      return outcome;
    },
  });
}
