import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import { EphemeralRunner, Labels } from '@aro/api';
import {
  DeleteOptions,
  type Expectations,
  PodKind,
  SecretKind,
  ignoreNotFound,
  isNotFound,
  objectKey,
} from '@aro/kube';
import type { Logger } from '@aro/observability';
import { isBeingDeleted, podDeleteOptions, podTerminated } from '../shared/pod-state';
import { type RunnerContext } from './reconciler-context';
import { describeError } from '../shared/describe-error';

/** Deletes what a runner owns: its pod and jitconfig secret, and what its container hook made. */
export class RunnerCleanup {
  constructor(
    private readonly ctx: RunnerContext,
    private readonly podCreations: Expectations,
  ) {}

  async resources(runner: EphemeralRunner, log: Logger): Promise<void> {
    const { namespace = '', name = '' } = runner.metadata ?? {};
    let pod: V1Pod | undefined;
    try {
      pod = await this.ctx.deps.cache.get<V1Pod>(PodKind, namespace, name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      // A pod this process created moments ago may not have reached the cache: a runner deleted right
      // after its pod was created (a scale-down, a teardown) would otherwise go with its pod left to
      // the garbage collector, or, where none runs, for good. Deleted by name: the miss costs one
      // call only inside that window, never on the path of a runner whose pod the cache shows.
      if (this.podCreations.pendingMs(objectKey(runner), []) > 0) {
        log.info('Deleting the runner pod this controller created, which the cache has not shown yet');
        try {
          await this.ctx.deps.client.delete(PodKind, namespace, name).catch(ignoreNotFound);
        } catch (err) {
          throw new Error(`failed to delete the runner pod: ${describeError(err)}`, { cause: err });
        }
        this.podCreations.forget(objectKey(runner));
      }
    }
    if (pod && !isBeingDeleted(pod)) {
      log.info('Deleting the runner pod', { podUid: pod.metadata?.uid, terminated: podTerminated(pod) });
      try {
        await this.ctx.deps.client
          .delete(PodKind, namespace, name, this.podDeleteOptions(pod))
          .catch(ignoreNotFound);
      } catch (err) {
        throw new Error(`failed to delete the runner pod: ${describeError(err)}`, { cause: err });
      }
    }

    // Deleted without reading it first: the read only told whether a delete was due, and a delete of
    // a secret already gone answers NotFound at the same cost. Once deleted by this process, a later
    // pass (the finalizer after the finished branch) has nothing to ask.
    if (!this.ctx.jitSecrets.secretDeleted(runner)) {
      log.info('Deleting the jitconfig secret');
      try {
        await this.ctx.deps.client.delete(SecretKind, namespace, name).catch(ignoreNotFound);
      } catch (err) {
        throw new Error(`failed to delete the jitconfig secret: ${describeError(err)}`, { cause: err });
      }
      this.ctx.jitSecrets.markSecretDeleted(runner);
    }
  }

  /** Pods and secrets the Kubernetes container hook made for the runner's job, found by label. */
  async containerHookResources(runner: EphemeralRunner, log: Logger): Promise<void> {
    const namespace = runner.metadata?.namespace ?? '';
    const labelSelector = `${Labels.runnerPod}=${runner.metadata?.name}`;
    const errors: Error[] = [];
    const sweep = async (kind: typeof PodKind, what: string) => {
      let items: V1Pod[] | V1Secret[];
      try {
        items = await this.ctx.deps.client.list<V1Pod | V1Secret>(kind, { namespace, labelSelector });
      } catch (err) {
        errors.push(new Error(`failed to list runner-linked ${what}s: ${describeError(err)}`));
        return;
      }
      for (const item of items) {
        if (isBeingDeleted(item)) continue;
        log.info(`Deleting a container hook ${what}`, { [what]: item.metadata?.name });
        try {
          await this.ctx.deps.client
            .delete(
              kind,
              namespace,
              item.metadata?.name ?? '',
              kind === PodKind ? this.podDeleteOptions(item as V1Pod) : undefined,
            )
            .catch(ignoreNotFound);
        } catch (err) {
          errors.push(
            new Error(`failed to delete runner-linked ${what} ${item.metadata?.name}: ${describeError(err)}`),
          );
        }
      }
    };
    await sweep(PodKind, 'pod');
    await sweep(SecretKind, 'secret');
    if (errors.length > 0) throw new AggregateError(errors, errors.map((e) => e.message).join('; '));
  }

  podDeleteOptions(pod: V1Pod): DeleteOptions | undefined {
    return podDeleteOptions(pod, this.ctx.gracePeriodSeconds);
  }
}
