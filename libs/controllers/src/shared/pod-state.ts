import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import type { DeleteOptions } from '@aro/kube';
import { EPHEMERAL_RUNNER_CONTAINER_NAME } from '@aro/api';

/**
 * Whether every container in the pod has stopped.
 *
 * No container the kubelet has reported on may still be running, whatever the phase says: the
 * phase is not always the kubelet's account. When a node is lost or shut down the control plane
 * moves its pods to Failed while the last status the kubelet managed to send still shows a container
 * running on the far side of the partition. Trusting the phase there would drop the pod from the API
 * while something may still be alive under it.
 *
 * The phase does decide whether containers that have not reported yet are still to come. A pod in
 * Succeeded or Failed starts nothing more, so a missing status is a container that never ran (how a
 * pod whose init container failed still counts as terminated). Short of a terminal phase every
 * container must have reported, or a runner about to be reported as started would be missed.
 *
 * Init containers are checked too: native sidecars run as init containers that outlive the regular
 * ones, and a pod still running one of those, or a legacy sidecar beside the runner, is not
 * terminated whatever the runner container did.
 */
export function podTerminated(pod: V1Pod): boolean {
  const statuses = pod.status?.containerStatuses ?? [];
  const initStatuses = pod.status?.initContainerStatuses ?? [];
  if (statuses.some((s) => !s.state?.terminated) || initStatuses.some((s) => !s.state?.terminated)) {
    return false;
  }
  const phase = pod.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') {
    return true;
  }
  return statuses.length === (pod.spec?.containers?.length ?? 0);
}

export function runnerContainerStatus(pod: V1Pod): V1ContainerStatus | undefined {
  return pod.status?.containerStatuses?.find((s) => s.name === EPHEMERAL_RUNNER_CONTAINER_NAME);
}

/**
 * Whether the runner process has exited: its container reported terminated. Only that proves the pod
 * can no longer execute a job. A runner container running, waiting (not started yet, or being
 * restarted), or not reported on may still hold one, whatever the pod's other containers did; taking
 * the busy marks off such a pod lets a drain or an autoscaler kill a job in progress.
 */
export function runnerProcessExited(pod: V1Pod): boolean {
  return !!runnerContainerStatus(pod)?.state?.terminated;
}

export function initContainerFailed(pod: V1Pod): boolean {
  return (pod.status?.initContainerStatuses ?? []).some(
    (s) => s.state?.terminated !== undefined && s.state.terminated.exitCode !== 0,
  );
}

/**
 * Whether the pod advertises the Ready condition. Where several Ready conditions appear (a status
 * written by hand, or by a faulty agent), the most recent transition wins. It is the single source
 * for both the reconciler, which mirrors it into `status.ready`, and the pod predicate, which must
 * wake the reconciler whenever it changes.
 */
export function podReady(pod: V1Pod): boolean {
  let ready = false;
  let latest = Number.NEGATIVE_INFINITY;
  for (const condition of pod.status?.conditions ?? []) {
    if (condition.type !== 'Ready') continue;
    const at = condition.lastTransitionTime ? new Date(condition.lastTransitionTime).getTime() : 0;
    if (at >= latest) {
      latest = at;
      ready = condition.status === 'True';
    }
  }
  return ready;
}

export function isBeingDeleted(obj: { metadata?: { deletionTimestamp?: Date | string } }): boolean {
  return obj.metadata?.deletionTimestamp !== undefined && obj.metadata.deletionTimestamp !== null;
}

/**
 * Immediate deletion for a pod with nothing left running; graceful (no options) for anything else.
 *
 * For a pod whose containers have all stopped, the grace period only waits on the kubelet to unmount
 * volumes and tear down the sandbox, which it does whether or not the object exists; dropping the
 * object hands its name, scheduling slot and quota back to the runner waiting to replace it. A pod
 * still running anything is deleted gracefully, so its containers get their SIGTERM to deregister
 * with. A negative grace period leaves the pod's own.
 *
 * The immediate delete is pinned to the pod observed, by UID. Pods are read from the cache and every
 * generation of a runner's pod has the same name, so a delete by name hits whatever holds the name
 * when the request lands. One controller cannot get that wrong, but during a leader handover the old
 * leader's reconcile is still in flight while the new one replaces pods: the UID turns that delete
 * into a conflict instead of killing a job with no grace at all.
 */
export function podDeleteOptions(
  pod: V1Pod,
  terminatedGracePeriodSeconds: number,
): DeleteOptions | undefined {
  if (!podTerminated(pod) || terminatedGracePeriodSeconds < 0) return undefined;
  return {
    gracePeriodSeconds: terminatedGracePeriodSeconds,
    preconditions: pod.metadata?.uid ? { uid: pod.metadata.uid } : undefined,
  };
}
