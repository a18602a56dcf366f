import type { V1Pod } from '@kubernetes/client-node';
import {
  AUTOSCALING_LISTENER_CONTAINER_NAME,
  AutoscalingListenerStatus,
  ScaleSetConditionTypes,
  ScaleSetReasons,
} from '@aro/api';
import { PodKind, Result, isNotFound, deleteIgnoringNotFound, done, requeueAfter } from '@aro/kube';
import { hashOf } from './listener-resources';
import {
  type ListenerContext,
  type ListenerPass,
  patchListenerStatus,
  restartBackoffMs,
} from './listener-context';
import { setCondition } from '../shared/conditions';

type Ended = { reason: string; message: string } | undefined;

/** Why a listener pod is over, or undefined while it lives: evicted, or its listener container exited. */
function podEnded(pod: V1Pod): Ended {
  if (pod.status?.reason === 'Evicted') {
    return {
      reason: ScaleSetReasons.listenerPodEvicted,
      message: pod.status.message ?? 'the listener pod was evicted',
    };
  }
  const container = pod.status?.containerStatuses?.find(
    (c) => c.name === AUTOSCALING_LISTENER_CONTAINER_NAME,
  );
  const terminated = container?.state?.terminated;
  if (terminated) {
    return {
      reason: ScaleSetReasons.listenerPodEnded,
      message: `the listener container exited with code ${terminated.exitCode}${terminated.reason ? ` (${terminated.reason})` : ''}${terminated.message ? `: ${terminated.message}` : ''}`,
    };
  }
  if (pod.status?.phase === 'Failed' || pod.status?.phase === 'Succeeded') {
    return {
      reason: ScaleSetReasons.listenerPodEnded,
      message: `the listener pod is ${pod.status.phase}${pod.status.reason ? ` (${pod.status.reason})` : ''}`,
    };
  }
  return undefined;
}

function listenerRunningSince(pod: V1Pod): number | undefined {
  const container = pod.status?.containerStatuses?.find(
    (c) => c.name === AUTOSCALING_LISTENER_CONTAINER_NAME,
  );
  const startedAt = container?.state?.running?.startedAt;
  return startedAt ? new Date(startedAt).getTime() : undefined;
}

/** The listener pod: created, recreated with backoff when it ends, replaced when its hash changes. */
export class ListenerPodLifecycle {
  constructor(
    private readonly ctx: Pick<ListenerContext, 'client' | 'cache' | 'events' | 'metrics' | 'now' | 'opts'>,
  ) {}

  async reconcile({ obj: listener, key, log }: ListenerPass, desired: V1Pod): Promise<Result> {
    const namespace = listener.metadata?.namespace ?? '';
    const name = listener.metadata?.name ?? '';
    let pod: V1Pod | undefined;
    try {
      pod = await this.ctx.cache.get<V1Pod>(PodKind, namespace, name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    const status = listener.status ?? {};
    if (!pod) {
      this.ctx.metrics?.set(key, false);
      const restarts = status.restarts ?? 0;
      if (restarts > 0 && status.lastRestartTime) {
        const readyAt = new Date(status.lastRestartTime).getTime() + restartBackoffMs(this.ctx, restarts);
        if (this.ctx.now() < readyAt) {
          log.info('Waiting before recreating the listener pod', {
            restarts,
            waitMs: readyAt - this.ctx.now(),
          });
          return requeueAfter(readyAt - this.ctx.now());
        }
      }
      await this.ctx.client.create(PodKind, desired);
      log.info('Created the listener pod', { restarts });
      return done;
    }
    if (pod.metadata?.deletionTimestamp) return requeueAfter(this.ctx.opts.deletionPollMs);

    const ended = podEnded(pod);
    if (ended) {
      const restarts = (status.restarts ?? 0) + 1;
      const waitMs = restartBackoffMs(this.ctx, restarts);
      log.warn('The listener pod ended; recreating it after a backoff', {
        reason: ended.reason,
        restarts,
        waitMs,
        detail: ended.message,
      });
      this.ctx.events?.record(
        listener,
        'Warning',
        ended.reason,
        `${ended.message}; recreating the pod in ${Math.round(waitMs / 1000)} s (restart ${restarts})`,
      );
      await patchListenerStatus(this.ctx, listener, {
        restarts,
        reason: ended.reason,
        message: ended.message,
        lastRestartTime: new Date(this.ctx.now()).toISOString(),
        conditions: setCondition(listener.status?.conditions, {
          type: ScaleSetConditionTypes.listenerRunning,
          status: 'False',
          reason: ended.reason,
          message: ended.message,
        }),
      });
      this.ctx.metrics?.set(key, false);
      await deleteIgnoringNotFound(this.ctx.client, PodKind, namespace, name, {
        uid: pod.metadata?.uid,
      });
      return requeueAfter(waitMs);
    }

    if (hashOf(pod) !== hashOf(desired)) {
      log.info('The listener pod is out of date; recreating it');
      await deleteIgnoringNotFound(this.ctx.client, PodKind, namespace, name, {
        uid: pod.metadata?.uid,
      });
      return requeueAfter(this.ctx.opts.deletionPollMs);
    }

    const runningSince = listenerRunningSince(pod);
    if (runningSince === undefined) {
      this.ctx.metrics?.set(key, false);
      return done;
    }
    this.ctx.metrics?.set(key, true);
    const stableForMs = this.ctx.now() - runningSince;
    const change: AutoscalingListenerStatus = {
      conditions: setCondition(listener.status?.conditions, {
        type: ScaleSetConditionTypes.listenerRunning,
        status: 'True',
        reason: ScaleSetReasons.listenerRunning,
        message: 'The listener pod is running',
      }),
    };
    if ((status.restarts ?? 0) > 0 && stableForMs >= this.ctx.opts.stableAfterMs) change.restarts = 0;
    await patchListenerStatus(this.ctx, listener, change);
    return (status.restarts ?? 0) > 0 && change.restarts === undefined
      ? requeueAfter(this.ctx.opts.stableAfterMs - stableForMs)
      : done;
  }
}
