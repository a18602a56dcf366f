import { EphemeralRunner, EphemeralRunnerKind, EphemeralRunnerSet } from '@aro/api';
import { Expectations, IssuedDeletions, isControlledBy } from '@aro/kube';
import type { EphemeralRunnerSetMetrics } from './runner-set-metrics';

import type { ScaleSetReconcilerDeps } from '../shared/controller-parts';
/*
 * What the parts of the EphemeralRunnerSet reconciler share: its dependencies, its settings with
 * their defaults, the cache-lag expectations and the Failed-runner backoff of each set. Each part
 * (scaling, removal of runners, the spec rollout and the Outdated rest, the proxy secret, status,
 * deletion) is a class of its own file that gets this context.
 */

export interface EphemeralRunnerSetReconcilerOptions {
  /** Label keys with these prefixes are not copied from the set onto its runners. */
  excludeLabelPropagationPrefixes?: readonly string[];
  /** First wait before a Failed runner is replaced; doubles per failure in a row. */
  failedRunnerBackoffBaseMs?: number;
  failedRunnerBackoffMaxMs?: number;
  /** How often a set being deleted looks again while runners with a job finish. */
  deletionPollMs?: number;
  /** Deadline of one Actions service call. */
  actionsCallTimeoutMs?: number;
  /** Whether to publish the gha_controller_*_ephemeral_runners gauges (upstream: metrics address not "0"). */
  publishMetrics?: boolean;
}

export interface EphemeralRunnerSetReconcilerDeps extends ScaleSetReconcilerDeps {
  metrics?: EphemeralRunnerSetMetrics;
}

/** Replacement of Failed runners: how many are owed, and when the next may be made. */
export interface FailureBackoff {
  failuresInARow: number;
  notBefore: number;
  owed: number;
}

export interface RunnerSetContext {
  deps: EphemeralRunnerSetReconcilerDeps;
  opts: Required<EphemeralRunnerSetReconcilerOptions>;
  now: () => number;
  /** Creations and deletions of the last pass the cache does not show yet. */
  expectations: Expectations;
  /** Runner deletions already issued, by this controller or the runners' own (shared with it in the app). */
  deletions: IssuedDeletions;
  /** Per set: the replacement of Failed runners (and of idle runners let go for a new spec). */
  failureBackoff: Map<string, FailureBackoff>;
  /**
   * Per set: the last listener patch a pass acted on. A patch that created runners is also on them
   * (their patch-id annotation); one that found the count already met created none, and without this a
   * later pass would act on it again and replace a runner that finished since under a count that
   * still included its job (the "51st runner" of a burst of 50).
   */
  actedPatchIds: Map<string, number>;
}

export function runnerSetContext(
  deps: EphemeralRunnerSetReconcilerDeps,
  options: EphemeralRunnerSetReconcilerOptions,
): RunnerSetContext {
  const now = deps.now ?? Date.now;
  return {
    deps,
    now,
    expectations: new Expectations(30_000, now),
    deletions: deps.deletions ?? new IssuedDeletions(30_000, now),
    failureBackoff: new Map(),
    actedPatchIds: new Map(),
    opts: {
      excludeLabelPropagationPrefixes: options.excludeLabelPropagationPrefixes ?? [],
      failedRunnerBackoffBaseMs: options.failedRunnerBackoffBaseMs ?? 5_000,
      failedRunnerBackoffMaxMs: options.failedRunnerBackoffMaxMs ?? 5 * 60_000,
      deletionPollMs: options.deletionPollMs ?? 5_000,
      actionsCallTimeoutMs: options.actionsCallTimeoutMs ?? 30_000,
      publishMetrics: options.publishMetrics ?? true,
    },
  };
}

/** Runners this set controls, from the cache. */
export async function ownedRunners(
  ctx: RunnerSetContext,
  set: EphemeralRunnerSet,
): Promise<EphemeralRunner[]> {
  const all = await ctx.deps.cache.list<EphemeralRunner>(EphemeralRunnerKind, {
    namespace: set.metadata?.namespace,
  });
  return all.filter((r) => isControlledBy(r, set));
}
