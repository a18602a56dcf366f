import type { V1Pod } from '@kubernetes/client-node';
import { Annotations, AutoscalingListener, EphemeralRunnerSet, EphemeralRunnerSetKind } from '@aro/api';
import {
  PodKind,
  type Released,
  Result,
  RoleBindingKind,
  RoleKind,
  ServiceAccountKind,
  deleteIgnoringNotFound,
  getIgnoringNotFound,
  isNotFound,
  released,
  requeueAfter,
} from '@aro/kube';
import type { ListenerContext, ListenerPass } from './listener-context';
import type { ListenerConfigStore } from './listener-config-store';

export class ListenerFinalizer {
  constructor(
    private readonly ctx: Pick<ListenerContext, 'client' | 'cache' | 'metrics' | 'opts' | 'now'>,
    private readonly store: ListenerConfigStore,
  ) {}

  /** Deletion: the pod first (it deletes its message session on SIGTERM), then what it used, then the finalizer. */
  async finalize({ obj: listener, key, log }: ListenerPass): Promise<Result | Released> {
    const namespace = listener.metadata?.namespace ?? '';
    const name = listener.metadata?.name ?? '';
    const setNamespace = listener.spec.autoscalingRunnerSetNamespace ?? '';
    this.ctx.metrics?.set(key, false);
    let podGone = true;
    try {
      const pod = await this.ctx.client.get<V1Pod>(PodKind, namespace, name);
      podGone = false;
      if (!pod.metadata?.deletionTimestamp)
        await deleteIgnoringNotFound(this.ctx.client, PodKind, namespace, name);
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
    if (await this.sessionStillOpen(listener)) {
      log.info('Waiting for the shared listener to close the scale set’s session');
      return requeueAfter(this.ctx.opts.deletionPollMs);
    }
    await deleteIgnoringNotFound(this.ctx.client, RoleBindingKind, setNamespace, name);
    await deleteIgnoringNotFound(this.ctx.client, RoleKind, setNamespace, name);
    await deleteIgnoringNotFound(this.ctx.client, ServiceAccountKind, namespace, name);
    log.info('Everything the deleted listener used is gone; removing its finalizer');
    return released();
  }

  /**
   * Shared mode: the replica serving the set still says `open` on its EphemeralRunnerSet. Its Role stays
   * until the replica has deleted the session and said `closed` (as a pod is waited for before its Role
   * goes), so its last patches are not refused; but never longer than `sharedReleaseTimeoutMs` after
   * the deletion began, since a shared listener that is down would otherwise hold the deletion forever.
   */
  private async sessionStillOpen(listener: AutoscalingListener): Promise<boolean> {
    if (this.ctx.opts.listenerMode !== 'shared') return false;
    const deleting = listener.metadata?.deletionTimestamp;
    const since = deleting ? new Date(deleting).getTime() : NaN;
    if (Number.isFinite(since) && this.ctx.now() - since > this.ctx.opts.sharedReleaseTimeoutMs) return false;
    const ers = await getIgnoringNotFound<EphemeralRunnerSet>(
      this.ctx.cache,
      EphemeralRunnerSetKind,
      listener.spec.autoscalingRunnerSetNamespace ?? '',
      listener.spec.ephemeralRunnerSetName ?? '',
    );
    return ers?.metadata?.annotations?.[Annotations.listenerSession]?.startsWith('open ') ?? false;
  }
}
