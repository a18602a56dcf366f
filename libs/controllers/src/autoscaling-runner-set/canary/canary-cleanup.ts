import { type AutoscalingRunnerSet, EphemeralRunnerSet, EphemeralRunnerSetKind } from '@aro/api';
import { deleteIgnoringNotFound, isControlledBy } from '@aro/kube';
import type { Logger } from '@aro/observability';
import type { ScaleSetContext } from '../runner-scale-set-context';
import { isCanarySet } from './canary-rollout';

/**
 * Deleting the AutoscalingRunnerSet: its canary sets go with its own EphemeralRunnerSet, before the scale
 * set is deleted on the service, so that no canary runner is left registered on a scale set being
 * deleted (their deletion waits for runners with a job, as the set's own does). True while one is left.
 */
export async function deleteCanarySets(
  ctx: ScaleSetContext,
  ars: AutoscalingRunnerSet,
  log: Logger,
): Promise<boolean> {
  const namespace = ars.metadata?.namespace ?? '';
  const canaries = (await ctx.cache.list<EphemeralRunnerSet>(EphemeralRunnerSetKind, { namespace })).filter(
    (set) => isCanarySet(set) && isControlledBy(set, ars),
  );
  for (const set of canaries) {
    if (!set.metadata?.deletionTimestamp) {
      await deleteIgnoringNotFound(ctx.client, EphemeralRunnerSetKind, namespace, set.metadata?.name ?? '');
    }
  }
  if (canaries.length > 0) log.info('Waiting for the canary EphemeralRunnerSets and their runners to go');
  return canaries.length > 0;
}
