import type { V1Pod } from '@kubernetes/client-node';
import {
  AUTOSCALING_LISTENER_FINALIZER,
  AutoscalingListener,
  AutoscalingListenerKind,
  listenerConfigSecretName,
} from '@aro/api';
import {
  PodKind,
  Result,
  RoleBindingKind,
  RoleKind,
  SecretKind,
  ServiceAccountKind,
  isNotFound,
  finalizersPatch,
  hasFinalizer,
  withoutFinalizers,
  deleteIgnoringNotFound,
  done,
  requeueAfter,
} from '@aro/kube';
import type { Logger } from '@aro/observability';
import { type ListenerContext } from './listener-context';

export class ListenerFinalizer {
  constructor(private readonly ctx: ListenerContext) {}

  /** Deletion: the pod first (it deletes its message session on SIGTERM), then what it used, then the finalizer. */
  async finalize(listener: AutoscalingListener, key: string, log: Logger): Promise<Result> {
    if (!hasFinalizer(listener, AUTOSCALING_LISTENER_FINALIZER)) return done;
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
    await deleteIgnoringNotFound(this.ctx.deps.client, SecretKind, namespace, listenerConfigSecretName(name));
    await deleteIgnoringNotFound(this.ctx.deps.client, RoleBindingKind, setNamespace, name);
    await deleteIgnoringNotFound(this.ctx.deps.client, RoleKind, setNamespace, name);
    await deleteIgnoringNotFound(this.ctx.deps.client, ServiceAccountKind, namespace, name);
    try {
      await this.ctx.deps.client.mergePatch(
        AutoscalingListenerKind,
        namespace,
        name,
        finalizersPatch(listener, withoutFinalizers(listener, AUTOSCALING_LISTENER_FINALIZER)),
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    this.ctx.deps.metrics?.forget(key);
    this.ctx.configRefresh.forget(key);
    log.info('Removed the finalizer of a deleted listener');
    return done;
  }
}
