import type { V1Pod } from '@kubernetes/client-node';

/*
 * The marks a busy runner's pod carries (see the EphemeralRunner controller's eviction-protection.ts,
 * which sets them while the runner executes a job): read and lifted by that controller and by the
 * eviction webhook, which must agree on them.
 */

/** On a runner pod while its runner executes a job: what the busy-runner PodDisruptionBudget selects. */
export const BUSY_RUNNER_LABEL = 'actions.github.com/runner-busy';
/** Cluster Autoscaler does not scale down a node with a pod annotated so. */
export const SAFE_TO_EVICT_ANNOTATION = 'cluster-autoscaler.kubernetes.io/safe-to-evict';
/** Karpenter neither consolidates nor expires a node with a pod annotated so. */
export const DO_NOT_DISRUPT_ANNOTATION = 'karpenter.sh/do-not-disrupt';

/** The merge patch that lifts the busy label and annotations, pinned to the pod read by its UID. */
export function busyMarksRemoval(uid: string): {
  metadata: { uid: string; labels: Record<string, null>; annotations: Record<string, null> };
} {
  return {
    metadata: {
      uid,
      labels: { [BUSY_RUNNER_LABEL]: null },
      annotations: { [SAFE_TO_EVICT_ANNOTATION]: null, [DO_NOT_DISRUPT_ANNOTATION]: null },
    },
  };
}

/** Whether the pod carries the busy label and both autoscaler annotations. */
export function podMarkedBusy(pod: V1Pod): boolean {
  return (
    pod.metadata?.labels?.[BUSY_RUNNER_LABEL] === 'true' &&
    pod.metadata?.annotations?.[SAFE_TO_EVICT_ANNOTATION] === 'false' &&
    pod.metadata?.annotations?.[DO_NOT_DISRUPT_ANNOTATION] === 'true'
  );
}
