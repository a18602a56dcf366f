import type { V1Pod, V1PodDisruptionBudget } from '@kubernetes/client-node';
import { EphemeralRunner, type ResourceKind, hasJob } from '@aro/api';
import { PodKind, type Result, isAlreadyExists, isConflict, isNotFound, done } from '@aro/kube';
import type { Logger } from '@aro/observability';
import { isBeingDeleted, podTerminated, runnerProcessExited } from '../shared/pod-state';
import { type RunnerContext, deleteRunnerOnce, runnerKey } from './reconciler-context';
import { describeError } from '../shared/describe-error';
import {
  BUSY_RUNNER_LABEL,
  DO_NOT_DISRUPT_ANNOTATION,
  SAFE_TO_EVICT_ANNOTATION,
  busyMarksRemoval,
  podMarkedBusy,
} from '../shared/busy-marks';
import { carriesJobLink, jobLinkMetadata } from './job-link';
import type { RunnerStatusWriter } from './status-writer';

/** The PodDisruptionBudget this controller keeps in each namespace it runs runners in. */
export const BUSY_RUNNERS_PDB_NAME = 'aro-busy-runners';
/** The Event reason of an idle runner whose pod was evicted or deleted from under it. */
export const REASON_RUNNER_POD_EVICTED = 'RunnerPodEvicted';

export const PodDisruptionBudgetKind: ResourceKind = {
  group: 'policy',
  version: 'v1',
  kind: 'PodDisruptionBudget',
  plural: 'poddisruptionbudgets',
  namespaced: true,
};

/**
 * `minAvailable` of the busy-runner budget: more pods than a namespace can hold, so that no busy pod
 * is ever a disruption the budget allows. An integer `minAvailable` is the one form the disruption
 * controller computes for pods of any controller; `maxUnavailable: 0` (or a percentage) needs the
 * owner's scale subresource, which an EphemeralRunner does not have, and the budget would only report
 * a sync failure.
 */
const NO_BUSY_POD_MAY_GO = 2_147_483_647;

function busyRunnersBudget(namespace: string): V1PodDisruptionBudget {
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: {
      name: BUSY_RUNNERS_PDB_NAME,
      namespace,
      labels: { 'app.kubernetes.io/managed-by': 'aro-controller' },
      annotations: {
        'actions.github.com/description':
          'Kept by the ARO controller: runner pods executing a job refuse voluntary eviction',
      },
    },
    spec: {
      minAvailable: NO_BUSY_POD_MAY_GO,
      selector: { matchLabels: { [BUSY_RUNNER_LABEL]: 'true' } },
    },
  };
}

/** Whether the pod carries any of the busy label and the autoscaler annotations. */
function podCarriesBusyMark(pod: V1Pod): boolean {
  return (
    pod.metadata?.labels?.[BUSY_RUNNER_LABEL] !== undefined ||
    pod.metadata?.annotations?.[SAFE_TO_EVICT_ANNOTATION] !== undefined ||
    pod.metadata?.annotations?.[DO_NOT_DISRUPT_ANNOTATION] !== undefined
  );
}

/**
 * Busy runners survive voluntary disruption (node drains, Cluster Autoscaler scale-down, Karpenter
 * consolidation); idle ones do not hold a node.
 *
 * While a runner executes a job its pod carries `actions.github.com/runner-busy: "true"`, which one
 * PodDisruptionBudget per namespace selects with no disruption allowed: the Eviction API answers 429
 * for it, and `kubectl drain` waits until the job ends and the pod goes by itself. The same patch sets
 * `cluster-autoscaler.kubernetes.io/safe-to-evict: "false"` and `karpenter.sh/do-not-disrupt: "true"`,
 * so those autoscalers skip the node instead of trying. An idle runner's pod carries none of it and is
 * evicted as any pod is; once this controller sees it terminating it deletes the runner, whose
 * finalizer removes the registration while the pod is still shutting down, and the set replaces it
 * with a fresh runner elsewhere.
 *
 * A label over a budget kept per pod or per set: one budget per namespace costs one create per
 * namespace for the controller's lifetime, where a budget per pod would cost two writes per job; and
 * two budgets over one pod make the Eviction API refuse with a 500, which a budget per set risks
 * while a set is replaced. A pod's labels are read by the Eviction API at the moment of the eviction,
 * so the label is the busy state with no other object to keep in step.
 */
export class EvictionProtection {
  /** Namespaces whose budget this process created or found. */
  private readonly budgets = new Set<string>();
  /** The pod UID last marked busy, per runner: the cache may not show the patch on the next pass. */
  private readonly marked = this.ctx.memory.slot<string>('pod marked busy');

  constructor(
    private readonly ctx: RunnerContext,
    private readonly status: RunnerStatusWriter,
    private readonly enabled: boolean,
  ) {}

  /**
   * Called for a live runner with a pod, before the pod follower. Returns a result when it ended the
   * pass (the runner is being replaced), undefined to let the follower go on.
   */
  async guard(runner: EphemeralRunner, pod: V1Pod, log: Logger): Promise<Result | undefined> {
    if (isBeingDeleted(pod)) {
      if (hasJob(runner) || podTerminated(pod)) return undefined;
      return this.replaceEvicted(runner, pod, log);
    }
    if (hasJob(runner) && !podTerminated(pod)) await this.markBusy(runner, pod, log);
    return undefined;
  }

  /**
   * An idle runner's pod was evicted (or deleted) from under it. The pod's runner is shutting down;
   * reusing its registration for a new pod would start a runner the service may have already given up
   * on, so the runner goes as a whole: its finalizer removes the registration before the pod is gone.
   */
  private async replaceEvicted(runner: EphemeralRunner, pod: V1Pod, log: Logger): Promise<Result> {
    log.info('The pod of an idle runner is being deleted (evicted or drained); deleting the runner', {
      podUid: pod.metadata?.uid,
    });
    this.status.event(
      runner,
      'Normal',
      REASON_RUNNER_POD_EVICTED,
      'The runner pod was evicted or deleted while the runner was idle; its registration is removed and the set replaces it',
    );
    await deleteRunnerOnce(this.ctx, runner);
    return done;
  }

  /**
   * Called while a runner being deleted keeps its pod because the service still holds its job. When
   * the runner process has exited (a sidecar keeps the pod running), nothing in the pod can execute a
   * job any more: its busy marks go, so that a drain or an autoscaler can take the node while the
   * finalizer waits for the service to let go of the job. Errors are logged, not thrown: the caller's
   * requeue comes back here.
   */
  async releaseExitedRunner(runner: EphemeralRunner, log: Logger): Promise<void> {
    const { namespace = '', name = '' } = runner.metadata ?? {};
    let pod: V1Pod;
    try {
      pod = await this.ctx.deps.cache.get<V1Pod>(PodKind, namespace, name);
    } catch (err) {
      if (isNotFound(err)) return;
      throw err;
    }
    if (isBeingDeleted(pod) || !runnerProcessExited(pod) || !podCarriesBusyMark(pod)) {
      return;
    }
    const uid = pod.metadata?.uid ?? '';
    try {
      await this.ctx.deps.client.mergePatch<V1Pod>(PodKind, namespace, name, busyMarksRemoval(uid));
    } catch (err) {
      if (isNotFound(err) || isConflict(err)) return;
      log.warn('Failed to remove the busy marks of a runner pod whose runner has exited', {
        error: describeError(err),
      });
      return;
    }
    this.marked.delete(runnerKey(runner));
    log.info('The runner process has exited: its pod no longer refuses voluntary eviction', { podUid: uid });
  }

  /** The busy marks (when protection is on) and the job link (job-link.ts), in one pod patch per job. */
  private async markBusy(runner: EphemeralRunner, pod: V1Pod, log: Logger): Promise<void> {
    const key = runnerKey(runner);
    const uid = pod.metadata?.uid ?? '';
    const link = jobLinkMetadata(runner) ?? { labels: {}, annotations: {} };
    const marked = !this.enabled || podMarkedBusy(pod);
    if ((marked && carriesJobLink(pod, link)) || this.marked.get(key) === uid) return;
    const namespace = pod.metadata?.namespace ?? '';
    if (this.enabled) await this.ensureBudget(namespace, log);
    const busy = this.enabled
      ? {
          labels: { [BUSY_RUNNER_LABEL]: 'true' },
          annotations: { [SAFE_TO_EVICT_ANNOTATION]: 'false', [DO_NOT_DISRUPT_ANNOTATION]: 'true' },
        }
      : { labels: {}, annotations: {} };
    try {
      await this.ctx.deps.client.mergePatch<V1Pod>(PodKind, namespace, pod.metadata?.name ?? '', {
        metadata: {
          // Pinned to the pod read: a pod of the same name made since must not inherit the protection.
          uid,
          labels: { ...link.labels, ...busy.labels },
          annotations: { ...link.annotations, ...busy.annotations },
        },
      });
    } catch (err) {
      // Gone, or replaced by a pod of the same name (the UID precondition): the next pass sees that one.
      if (isNotFound(err) || isConflict(err)) return;
      throw new Error(`failed to mark the busy runner's pod as not to be evicted: ${describeError(err)}`, {
        cause: err,
      });
    }
    this.marked.set(key, uid);
    log.info(
      this.enabled
        ? 'The runner executes a job: its pod now refuses voluntary eviction'
        : 'The runner executes a job: its pod now names it',
      { jobId: runner.status?.jobId, podUid: uid },
    );
  }

  private async ensureBudget(namespace: string, log: Logger): Promise<void> {
    if (this.budgets.has(namespace)) return;
    try {
      await this.ctx.deps.client.create<V1PodDisruptionBudget>(
        PodDisruptionBudgetKind,
        busyRunnersBudget(namespace),
      );
      log.info('Created the PodDisruptionBudget of busy runners', { pdb: BUSY_RUNNERS_PDB_NAME });
    } catch (err) {
      if (!isAlreadyExists(err)) {
        throw new Error(
          `failed to create PodDisruptionBudget ${namespace}/${BUSY_RUNNERS_PDB_NAME}: ${describeError(err)}`,
          { cause: err },
        );
      }
    }
    this.budgets.add(namespace);
  }
}
