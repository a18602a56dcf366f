import type { ResourceKind } from '@aro/api';
import type { KubeApi } from '../client/kube-api';
import type { KubeObject, Reader } from '../client/types';
import type { ReconcileContext, Reconciler, Request, Result } from '../controller/types';
import type { ObjectMemory } from '../controllerutil/object-memory';
import type { Pass } from '../controllerutil/pass';
import {
  type FinalizerNames,
  type FinalizerWriter,
  type Released,
  patchingFinalizers,
  reconcileFinalized,
} from './finalizer';

/** The ports every {@link FinalizingReconciler}'s context has; the rest of the context is the controller's. */
export interface FinalizingPorts {
  /** The informer cache the object is read from. */
  cache: Pick<Reader, 'get'>;
  client: Pick<KubeApi, 'mergePatch'>;
  /** The controller's per-object memory, forgotten once the object is gone or released. */
  memory: Pick<ObjectMemory, 'forget'>;
}

/** The kind a {@link FinalizingReconciler} reconciles and the finalizer it keeps on it. */
export interface FinalizingReconcilerSpec<T extends KubeObject> {
  kind: ResourceKind;
  finalizer: FinalizerNames;
  /** How the finalizer change is written; a merge patch of the object as read by default. */
  write?: FinalizerWriter<T>;
}

/**
 * A reconciler whose object carries its finalizer: the opening every such controller shares (read
 * from the cache, add the finalizer, forget what is gone, remove the finalizer once released) is
 * here, so a controller is its two halves: `apply` for a live object and `cleanup` for one being
 * deleted, each given the {@link Pass}.
 */
export abstract class FinalizingReconciler<
  T extends KubeObject,
  Ctx extends FinalizingPorts,
> implements Reconciler {
  private readonly write: FinalizerWriter<T>;

  /**
   * `ctx` is what the controller's parts are built from: assigned before the subclass's fields, so
   * they may be initialised from it (`private readonly status = new StatusWriter(this.ctx)`).
   */
  protected constructor(
    protected readonly ctx: Ctx,
    private readonly finalized: FinalizingReconcilerSpec<T>,
  ) {
    this.write = finalized.write ?? patchingFinalizers<T>(ctx.client, finalized.kind);
  }

  reconcile(req: Request, pass: ReconcileContext): Promise<Result> {
    const { kind, finalizer } = this.finalized;
    return reconcileFinalized<T>(req, pass, {
      reader: this.ctx.cache,
      kind,
      finalizer,
      write: (obj, patch, step, pass) => this.writeFinalizers(obj, patch, step, pass),
      memory: this.ctx.memory,
      admit: (pass) => this.admit(pass),
      apply: (pass) => this.apply(pass),
      cleanup: (pass) => this.cleanup(pass),
    });
  }

  /**
   * Writes a finalizer change (see {@link FinalizerWriter}): the spec's writer, or a merge patch of the
   * object as read. A controller whose own writes are tracked overrides it, so that they see this one.
   */
  protected writeFinalizers(
    obj: T,
    patch: object,
    step: 'add' | 'remove',
    pass?: ReconcileContext,
  ): Promise<T> {
    return this.write(obj, patch, step, pass);
  }

  /**
   * Looked at first, before the finalizer: a Result ends the pass (see FinalizedObjectSpec.admit).
   * Most controllers admit every object they read.
   */
  protected admit(_pass: Pass<T>): Promise<Result | undefined> {
    return Promise.resolve(undefined);
  }

  /** A live object that carries the finalizer. */
  protected abstract apply(pass: Pass<T>): Promise<Result>;

  /** An object being deleted that still carries the finalizer: `released()` once it holds nothing. */
  protected abstract cleanup(pass: Pass<T>): Promise<Result | Released>;
}
