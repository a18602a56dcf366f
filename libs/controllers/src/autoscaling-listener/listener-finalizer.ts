import type { V1Pod } from '@kubernetes/client-node';
import { listenerConfigSecretName } from '@aro/api';
import {
  PodKind,
  type Released,
  Result,
  RoleBindingKind,
  RoleKind,
  SecretKind,
  ServiceAccountKind,
  deleteIgnoringNotFound,
  isNotFound,
  released,
  requeueAfter,
} from '@aro/kube';
import type { ListenerContext, ListenerPass } from './listener-context';

export class ListenerFinalizer {
  constructor(private readonly ctx: Pick<ListenerContext, 'client' | 'metrics' | 'opts'>) {}

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
    await deleteIgnoringNotFound(this.ctx.client, SecretKind, namespace, listenerConfigSecretName(name));
    await deleteIgnoringNotFound(this.ctx.client, RoleBindingKind, setNamespace, name);
    await deleteIgnoringNotFound(this.ctx.client, RoleKind, setNamespace, name);
    await deleteIgnoringNotFound(this.ctx.client, ServiceAccountKind, namespace, name);
    log.info('Everything the deleted listener used is gone; removing its finalizer');
    return released();
  }
}
