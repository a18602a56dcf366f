import type { ScaleSetCondition } from '@aro/api';
import { findCondition, setCondition } from './conditions';

/**
 * The condition type on EphemeralRunnerSets and AutoscalingRunnerSets that says whether their runners
 * come up: False with the reason of the last Failed runner (the kubelet's, for a runner the start
 * watchdog failed: ImagePullBackOff, InvalidImageName, Unschedulable ...) and how many runners failed
 * with it since a runner last came up; True again once one is ready. Absent until a runner fails.
 */
export const RUNNERS_HEALTHY_CONDITION = 'RunnersHealthy';

/**
 * The AutoscalingRunnerSet's copy of its EphemeralRunnerSet's RunnersHealthy condition, so that
 * `kubectl describe ars` names the reason runners fail; undefined when there is nothing to change.
 */
export function mirroredRunnersHealthy(
  arsConditions: readonly ScaleSetCondition[] | undefined,
  runnerSetConditions: readonly ScaleSetCondition[] | undefined,
  now: Date,
): ScaleSetCondition[] | undefined {
  const source = findCondition(runnerSetConditions, RUNNERS_HEALTHY_CONDITION);
  if (!source) return undefined;
  const mine = findCondition(arsConditions, RUNNERS_HEALTHY_CONDITION);
  if (
    mine &&
    mine.status === source.status &&
    mine.reason === source.reason &&
    mine.message === source.message
  ) {
    return undefined;
  }
  return setCondition(
    arsConditions,
    { type: source.type, status: source.status, reason: source.reason, message: source.message },
    now,
  );
}
