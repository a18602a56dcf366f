import {
  CanaryAnnotations,
  type EphemeralRunner,
  type EphemeralRunnerSet,
  EphemeralRunnerSetKind,
  parseCanaryStartFailures,
} from '@aro/api';
import type { KubeApi } from '@aro/kube';

/**
 * A canary set's runner that never started (its pod refused, or failed by the start watchdog) is a
 * failed canary job: the runner is deleted and replaced, so its count is kept on the canary set for the
 * AutoscalingRunnerSet controller to judge. Only canary sets are written to; others cost nothing.
 */
export async function recordCanaryStartFailures(
  client: Pick<KubeApi, 'mergePatch'>,
  set: EphemeralRunnerSet,
  failed: readonly EphemeralRunner[],
): Promise<void> {
  const annotations = set.metadata?.annotations;
  const runner = failed[0];
  if (!annotations?.[CanaryAnnotations.canaryOf] || !runner) return;
  const before = parseCanaryStartFailures(annotations[CanaryAnnotations.startFailures]);
  const next = {
    count: (before?.count ?? 0) + failed.length,
    first:
      before?.first ||
      `runner ${runner.metadata?.name ?? ''} did not start (${runner.status?.reason ?? 'no reason'}: ${runner.status?.message ?? ''})`,
  };
  await client.mergePatch(EphemeralRunnerSetKind, set.metadata?.namespace ?? '', set.metadata?.name ?? '', {
    metadata: { annotations: { [CanaryAnnotations.startFailures]: JSON.stringify(next) } },
  });
}
