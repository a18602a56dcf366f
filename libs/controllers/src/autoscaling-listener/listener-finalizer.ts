import type { V1Pod } from '@kubernetes/client-node';
import { AutoscalingListener } from '@aro/api';
import {
  PodKind,
  type Released,
  Result,
  RoleBindingKind,
  RoleKind,
  ServiceAccountKind,
  deleteIgnoringNotFound,
  isNotFound,
  released,
  requeueAfter,
} from '@aro/kube';
import type { Logger } from '@aro/observability';
import { type ListenerContext } from './listener-context';
import type { ListenerConfigStore } from './listener-config-store';

export class ListenerFinalizer {
  constructor(
    private readonly ctx: ListenerContext,
    private readonly store: ListenerConfigStore,
  ) {}

  /** Deletion: the pod first (it deletes its message session on SIGTERM), then what it used, then the finalizer. */
  async finalize(listener: AutoscalingListener, key: string, log: Logger): Promise<Result | Released> {
    const namespace = listener.metadata?.namespace ?? '';
    const name = listener.metadata?.name ?? '';
    const setNamespace = listener.spec.autoscalingRunnerSetNamespace ?? '';
    this.ctx.deps.metrics?.set(key, false);
    let podGone = true;
    try {
      const pod = await this.ctx.deps.client.get<V1Pod>(PodKind, namespace, name);
      podGone = false;
      if (!pod.metadata?.deletionTimestamp)
        await deleteIgnoringNotFound(this.ctx.deps.client, PodKind, namespace, name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    if (!podGone) {
      log.info('Waiting for the listener pod to go');
      return requeueAfter(this.ctx.opts.deletionPollMs);
    }
    // The config Secret, or in shared mode the set's key of the shared one: the shared listener then
    // stops serving the set (and deletes its session) at its next read.
    await this.store.remove(listener);
    await deleteIgnoringNotFound(this.ctx.deps.client, RoleBindingKind, setNamespace, name);
    await deleteIgnoringNotFound(this.ctx.deps.client, RoleKind, setNamespace, name);
    await deleteIgnoringNotFound(this.ctx.deps.client, ServiceAccountKind, namespace, name);
    log.info('Everything the deleted listener used is gone; removing its finalizer');
    return released();
  }
}
