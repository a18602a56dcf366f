import {
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
  EphemeralRunnerSetPhase,
  EphemeralRunnerSetStatus,
  Labels,
  ScaleSetCondition,
  ScaleSetConditionTypes,
} from '@aro/api';
import { type KeyedStore, OwnWrites, Result, done, isNotFound, requeueAfter } from '@aro/kube';
import { isDeepStrictEqual } from 'node:util';
import type { RunnerSetContext, RunnerSetPass } from './runner-set-context';
import { findCondition, setCondition } from '../shared/conditions';
import { scaleSetMetricLabels } from '../shared/scale-set-labels';

/** The set's counts: its status (written only when it changed) and its gauges. */
export class RunnerSetStatusWriter {
  /**
   * Set versions our status writes replaced. A pass woken before the watch delivered our last status
   * write reads the old phase: after an Outdated write that pass would take the set for Running and
   * create runners again (each pass used to be slow enough, with a Secret read, to hide this).
   */
  private readonly ownWrites: OwnWrites;
  /** Per set: when its status was last written, for the coalescing of count changes. */
  private readonly lastWrittenAt: KeyedStore<number>;

  constructor(
    private readonly ctx: Pick<RunnerSetContext, 'client' | 'metrics' | 'memory' | 'now' | 'opts'>,
  ) {
    this.ownWrites = new OwnWrites(10_000, ctx.now, ctx.memory.slot('own status writes'));
    this.lastWrittenAt = ctx.memory.slot('status written at');
  }

  /** How long the cached set (at `resourceVersion`) may still be behind our last status write. */
  behindMs(key: string, resourceVersion: string | undefined): number {
    return this.ownWrites.behindMs(key, resourceVersion);
  }

  publishCounts({ obj: set, key, states }: RunnerSetPass): void {
    if (!this.ctx.opts.publishMetrics || !this.ctx.metrics) return;
    const labels = scaleSetMetricLabels(
      set.metadata?.labels?.[Labels.scaleSetName] ?? set.metadata?.name ?? '',
      set.metadata?.labels?.[Labels.scaleSetNamespace] ?? set.metadata?.namespace ?? '',
      set.spec.ephemeralRunnerSpec?.githubConfigUrl,
    );
    this.ctx.metrics.set(key, labels, {
      pending: states.pending.length,
      running: states.running.length,
      failed: states.failed.length,
    });
  }

  /**
   * Writes the status when any counted value, the phase or the condition changed; never otherwise.
   *
   * With `coalesce`, a change of the counts alone (the same phase and conditions, and the set neither
   * becoming nor ceasing to be empty, nor to have Failed runners) is written at most once per
   * `statusCoalesceMs`: the pass returns a requeue for the rest of the window, and the pass then (or any
   * pass before it) writes the counts of that moment. In a burst every runner's start and end moved the
   * counts, and each move was a status write here and one more on the AutoscalingRunnerSet, which mirrors
   * them: about two of each per job. The gauges (publishCounts) are unaffected; `kubectl get` shows the
   * counts within the window.
   */
  async updateStatus(
    { obj: set, key, states, log }: RunnerSetPass,
    phase: EphemeralRunnerSetPhase,
    versionCondition?: { status: 'True' | 'False'; reason: string; message: string },
    runnersHealthy?: Omit<ScaleSetCondition, 'lastTransitionTime'>,
    coalesce = false,
  ): Promise<Result> {
    const current = set.status;
    let conditions = current?.conditions;
    if (runnersHealthy) conditions = setCondition(conditions, runnersHealthy, new Date(this.ctx.now()));
    if (versionCondition) {
      const existing = findCondition(conditions, ScaleSetConditionTypes.runnerVersionCurrent);
      if (
        !existing ||
        existing.status !== versionCondition.status ||
        existing.reason !== versionCondition.reason ||
        existing.message !== versionCondition.message
      ) {
        conditions = setCondition(
          conditions,
          { type: ScaleSetConditionTypes.runnerVersionCurrent, ...versionCondition },
          new Date(this.ctx.now()),
        );
      }
    }
    const desired: EphemeralRunnerSetStatus = {
      currentReplicas: states.pending.length + states.running.length,
      pendingEphemeralRunners: states.pending.length,
      runningEphemeralRunners: states.running.length,
      failedEphemeralRunners: states.failed.length,
      phase,
      ...(conditions ? { conditions } : {}),
    };
    const unchanged =
      current !== undefined &&
      current.currentReplicas === desired.currentReplicas &&
      (current.pendingEphemeralRunners ?? 0) === desired.pendingEphemeralRunners &&
      (current.runningEphemeralRunners ?? 0) === desired.runningEphemeralRunners &&
      (current.failedEphemeralRunners ?? 0) === desired.failedEphemeralRunners &&
      current.phase === desired.phase &&
      isDeepStrictEqual(current.conditions ?? [], desired.conditions ?? []);
    if (unchanged) return done;
    if (coalesce && current !== undefined) {
      const sameShape =
        current.phase === desired.phase &&
        isDeepStrictEqual(current.conditions ?? [], desired.conditions ?? []) &&
        (current.currentReplicas ?? 0) > 0 === (desired.currentReplicas ?? 0) > 0 &&
        (current.failedEphemeralRunners ?? 0) > 0 === (desired.failedEphemeralRunners ?? 0) > 0;
      const waitMs =
        (this.lastWrittenAt.get(key) ?? -Infinity) + this.ctx.opts.statusCoalesceMs - this.ctx.now();
      if (sameShape && waitMs > 0) return requeueAfter(waitMs);
    }
    try {
      const written = await this.ctx.client.mergePatchStatus<EphemeralRunnerSet>(
        EphemeralRunnerSetKind,
        set.metadata?.namespace ?? '',
        set.metadata?.name ?? '',
        {
          status: desired,
        },
      );
      this.ownWrites.record(key, set.metadata?.resourceVersion, written.metadata?.resourceVersion);
      this.lastWrittenAt.set(key, this.ctx.now());
      log.debug('Updated the status', { ...desired, conditions: undefined });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    return done;
  }
}
