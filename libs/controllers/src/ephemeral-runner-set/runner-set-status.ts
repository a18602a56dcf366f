import {
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
  EphemeralRunnerSetPhase,
  EphemeralRunnerSetStatus,
  Labels,
  ScaleSetCondition,
  ScaleSetConditionTypes,
} from '@aro/api';
import { isNotFound } from '@aro/kube';
import type { Logger } from '@aro/observability';
import { isDeepStrictEqual } from 'node:util';
import { RunnersByState } from './runner-states';
import { type RunnerSetContext } from './runner-set-context';
import { findCondition, setCondition } from '../shared/conditions';
import { scaleSetMetricLabels } from '../shared/scale-set-labels';

/** The set's counts: its status (written only when it changed) and its gauges. */
export class RunnerSetStatusWriter {
  constructor(private readonly ctx: RunnerSetContext) {}

  publishCounts(set: EphemeralRunnerSet, key: string, states: RunnersByState): void {
    if (!this.ctx.opts.publishMetrics || !this.ctx.deps.metrics) return;
    const labels = scaleSetMetricLabels(
      set.metadata?.labels?.[Labels.scaleSetName] ?? set.metadata?.name ?? '',
      set.metadata?.labels?.[Labels.scaleSetNamespace] ?? set.metadata?.namespace ?? '',
      set.spec.ephemeralRunnerSpec?.githubConfigUrl,
    );
    this.ctx.deps.metrics.set(key, labels, {
      pending: states.pending.length,
      running: states.running.length,
      failed: states.failed.length,
    });
  }

  /** Writes the status when any counted value, the phase or the condition changed; never otherwise. */
  async updateStatus(
    set: EphemeralRunnerSet,
    states: RunnersByState,
    phase: EphemeralRunnerSetPhase,
    log: Logger,
    versionCondition?: { status: 'True' | 'False'; reason: string; message: string },
    runnersHealthy?: Omit<ScaleSetCondition, 'lastTransitionTime'>,
  ): Promise<void> {
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
    if (unchanged) return;
    try {
      await this.ctx.deps.client.mergePatchStatus(
        EphemeralRunnerSetKind,
        set.metadata?.namespace ?? '',
        set.metadata?.name ?? '',
        {
          status: desired,
        },
      );
      log.debug('Updated the status', { ...desired, conditions: undefined });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}
