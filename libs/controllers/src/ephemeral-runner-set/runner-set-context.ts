import { EphemeralRunner, EphemeralRunnerKind, EphemeralRunnerSet } from '@aro/api';
import {
  Expectations,
  IssuedDeletions,
  type KeyedStore,
  type Pass,
  type Reader,
  isControlledBy,
} from '@aro/kube';
import { RunnerEndings } from './runner-endings';
import type { RunnersByState } from './runner-states';
import type { EphemeralRunnerSetMetrics } from './runner-set-metrics';

import { type ScaleSetPorts, type ScaleSetReconcilerDeps, scaleSetPorts } from '../shared/controller-parts';
/*
 * What the parts of the EphemeralRunnerSet reconciler are built from: the ports (client, cache,
 * resolver, events), its settings with their defaults, and its one per-set memory with the slots the
 * parts keep in it (cache-lag expectations, the Failed-runner backoff). Each part (scaling, removal of
 * runners, the spec rollout and the Outdated rest, the proxy secret, status, deletion) is a class of
 * its own file that takes the few of these it uses, and a {@link RunnerSetPass} per call.
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
  /**
   * How long a runner that ended after a job under the standing listener patch keeps its slot, unless
   * the listener reported its job completed (see RunnerEndings): the listener's answer to the
   * JobCompleted normally arrives well within it.
   */
  endedRunnerHoldMs?: number;
  /**
   * A change of the set's counts alone is written to its status at most once per this window (see
   * RunnerSetStatusWriter.updateStatus); 0 writes every change.
   */
  statusCoalesceMs?: number;
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

/** One pass of one set: the set, its key, signal and logger, and its runners by state as counted. */
export interface RunnerSetPass extends Pass<EphemeralRunnerSet> {
  readonly states: RunnersByState;
}

export interface RunnerSetContext extends ScaleSetPorts<EphemeralRunnerSetMetrics> {
  opts: Required<EphemeralRunnerSetReconcilerOptions>;
  /** Creations and deletions of the last pass the cache does not show yet. */
  expectations: Expectations;
  /** Per set: the replacement of Failed runners (and of idle runners let go for a new spec). */
  failureBackoff: KeyedStore<FailureBackoff>;
  /** Per set: the runners that ended after a job since its listener patch arrived (watch events). */
  endings: RunnerEndings;
  /** Runner deletions already issued, by this controller or the runners' own (shared with it in the app). */
  deletions: IssuedDeletions;
}

export function runnerSetContext(
  deps: EphemeralRunnerSetReconcilerDeps,
  options: EphemeralRunnerSetReconcilerOptions,
): RunnerSetContext {
  const ports = scaleSetPorts(deps);
  const endedRunnerHoldMs = options.endedRunnerHoldMs ?? 3_000;
  return {
    ...ports,
    expectations: new Expectations(30_000, ports.now, ports.memory.slot('expectations')),
    failureBackoff: ports.memory.slot('failed-runner backoff'),
    endings: new RunnerEndings(ports.memory.slot('patch standing'), ports.now, endedRunnerHoldMs),
    deletions: deps.deletions ?? new IssuedDeletions(30_000, ports.now),
    opts: {
      excludeLabelPropagationPrefixes: options.excludeLabelPropagationPrefixes ?? [],
      failedRunnerBackoffBaseMs: options.failedRunnerBackoffBaseMs ?? 5_000,
      failedRunnerBackoffMaxMs: options.failedRunnerBackoffMaxMs ?? 5 * 60_000,
      deletionPollMs: options.deletionPollMs ?? 5_000,
      actionsCallTimeoutMs: options.actionsCallTimeoutMs ?? 30_000,
      publishMetrics: options.publishMetrics ?? true,
      endedRunnerHoldMs,
      statusCoalesceMs: options.statusCoalesceMs ?? 2_000,
    },
  };
}

/** Runners this set controls, from the cache. */
export async function ownedRunners(cache: Reader, set: EphemeralRunnerSet): Promise<EphemeralRunner[]> {
  const all = await cache.list<EphemeralRunner>(EphemeralRunnerKind, {
    namespace: set.metadata?.namespace,
  });
  return all.filter((r) => isControlledBy(r, set));
}
