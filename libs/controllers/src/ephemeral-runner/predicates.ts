import { isDeepStrictEqual } from 'node:util';
import type { V1ObjectMeta, V1Pod } from '@kubernetes/client-node';
import type { EphemeralRunner } from '@aro/api';
import type { Predicate } from '@aro/kube';
import { podReady } from '../shared/pod-state';

/*
 * These predicates only keep work out of the queue. Each is the projection of the fields its
 * reconciler reads: an update is dropped only when every one of them is unchanged. When the
 * reconciler starts reading a new field, the projection must grow with it, or an event it needed
 * would be lost. Creates and deletes always pass.
 */

function sameTime(a: Date | string | undefined, b: Date | string | undefined): boolean {
  if (a === undefined || a === null || b === undefined || b === null) return (a ?? null) === (b ?? null);
  return new Date(a).getTime() === new Date(b).getTime();
}

/** The metadata a reconciler branches on; what the API server keeps for itself is left out. */
function sameReconciledMeta(a: V1ObjectMeta = {}, b: V1ObjectMeta = {}): boolean {
  return (
    a.generation === b.generation &&
    sameTime(a.deletionTimestamp, b.deletionTimestamp) &&
    isDeepStrictEqual(a.finalizers ?? [], b.finalizers ?? []) &&
    isDeepStrictEqual(a.labels ?? {}, b.labels ?? {}) &&
    isDeepStrictEqual(a.annotations ?? {}, b.annotations ?? {}) &&
    isDeepStrictEqual(a.ownerReferences ?? [], b.ownerReferences ?? [])
  );
}

/**
 * Updates of an EphemeralRunner that change what its reconciler does. It reads the spec, the phase,
 * readiness, runner identity, the failures (for the backoff) and whether a job is assigned (to
 * promote Pending to Running). The listener's other job details, reason and message are never read.
 */
export function ephemeralRunnerPredicate(): Predicate<EphemeralRunner> {
  return {
    update(oldRunner, newRunner) {
      if (oldRunner === undefined) return true;
      if (!sameReconciledMeta(oldRunner.metadata, newRunner.metadata)) return true;
      if (!isDeepStrictEqual(oldRunner.spec, newRunner.spec)) return true;
      const a = oldRunner.status ?? {};
      const b = newRunner.status ?? {};
      return (
        a.phase !== b.phase ||
        (a.ready ?? false) !== (b.ready ?? false) ||
        (a.runnerId ?? 0) !== (b.runnerId ?? 0) ||
        (a.jobId ?? '') !== (b.jobId ?? '') ||
        !isDeepStrictEqual(a.failures ?? {}, b.failures ?? {})
      );
    },
  };
}

/**
 * Updates of a runner pod that change what the reconciler does. It reads the UID, the deletion
 * timestamp, phase, reason and message, container and init-container statuses, and the Ready
 * condition; never the spec or the rest of the status, which is where most pod updates land
 * (addresses, the node, start time, the other conditions).
 */
export function ownedPodPredicate(): Predicate<V1Pod> {
  return {
    update(oldPod, newPod) {
      if (oldPod === undefined) return true;
      if (oldPod.metadata?.uid !== newPod.metadata?.uid) return true;
      if (!sameTime(oldPod.metadata?.deletionTimestamp, newPod.metadata?.deletionTimestamp)) return true;
      const a = oldPod.status ?? {};
      const b = newPod.status ?? {};
      if (a.phase !== b.phase || a.reason !== b.reason || a.message !== b.message) return true;
      if (!isDeepStrictEqual(a.containerStatuses ?? [], b.containerStatuses ?? [])) return true;
      if (!isDeepStrictEqual(a.initContainerStatuses ?? [], b.initContainerStatuses ?? [])) return true;
      return podReady(oldPod) !== podReady(newPod);
    },
  };
}
