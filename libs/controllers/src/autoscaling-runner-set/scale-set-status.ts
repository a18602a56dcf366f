import {
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  AutoscalingRunnerSetPhase,
  AutoscalingRunnerSetStatus,
  EphemeralRunnerSet,
  ScaleSetCondition,
  ScaleSetConditionTypes,
  ScaleSetReasons,
} from '@aro/api';
import { Result, requeueAfter } from '@aro/kube';
import type { Logger } from '@aro/observability';
import { mirroredRunnersHealthy } from '../shared/runners-healthy';
import { classifyScaleSetFailure } from '../shared/failure-reasons';
import { type ScaleSetContext } from './runner-scale-set-context';
import { findCondition, setCondition } from '../shared/conditions';
import { patchChangedStatus } from '../shared/changed-status';

/** The set's status: conditions, phase and the counts mirrored from its EphemeralRunnerSet. */
export class ScaleSetStatusWriter {
  constructor(private readonly ctx: ScaleSetContext) {}

  /** Condition + Warning Event with the cause, and a growing wait before the next attempt. */
  async recordFailure(ars: AutoscalingRunnerSet, key: string, err: unknown, log: Logger): Promise<Result> {
    const failure = classifyScaleSetFailure(err, ars.spec.proxy);
    const waitMs = this.ctx.failures.when(key);
    const attempts = this.ctx.failures.numRequeues(key);
    // Not "on the Actions service": the reason says where it failed (a vault outage never reached it).
    log.warn('Cannot reach the runner scale set', {
      reason: failure.reason,
      attempts,
      retryInMs: waitMs,
      err: failure.message,
    });
    const previous = findCondition(ars.status?.conditions, ScaleSetConditionTypes.scaleSetReady);
    if (previous?.reason !== failure.reason || previous.message !== failure.message || attempts === 1) {
      this.ctx.events?.record(ars, 'Warning', failure.reason, failure.message);
    }
    await this.setCondition(ars, {
      type: ScaleSetConditionTypes.scaleSetReady,
      status: 'False',
      reason: failure.reason,
      message: failure.message,
    });
    return requeueAfter(waitMs);
  }

  /** `ScaleSetReady=True` once the scale set is reachable again (or for the first time). */
  async markReady(ars: AutoscalingRunnerSet, key: string, scaleSetId: number): Promise<void> {
    const hadFailures = this.ctx.failures.numRequeues(key) > 0;
    this.ctx.failures.forget(key);
    const ready = findCondition(ars.status?.conditions, ScaleSetConditionTypes.scaleSetReady);
    if (hadFailures || ready?.status !== 'True') {
      await this.setCondition(ars, {
        type: ScaleSetConditionTypes.scaleSetReady,
        status: 'True',
        reason: 'ScaleSetReady',
        message: `Runner scale set ${scaleSetId} is registered on the Actions service`,
      });
    }
  }

  async updateStatus(
    ars: AutoscalingRunnerSet,
    runnerSet: EphemeralRunnerSet,
    phase: AutoscalingRunnerSetPhase,
  ): Promise<void> {
    let conditions = ars.status?.conditions;
    const outdated = phase === AutoscalingRunnerSetPhase.Outdated;
    const version = findCondition(conditions, ScaleSetConditionTypes.runnerVersionCurrent);
    if (outdated || version) {
      const source = findCondition(runnerSet.status?.conditions, ScaleSetConditionTypes.runnerVersionCurrent);
      const next: Omit<ScaleSetCondition, 'lastTransitionTime'> = outdated
        ? {
            type: ScaleSetConditionTypes.runnerVersionCurrent,
            status: 'False',
            reason: ScaleSetReasons.outdated,
            message:
              source?.message ?? 'A runner reported a deprecated runner version; update the runner image',
          }
        : {
            type: ScaleSetConditionTypes.runnerVersionCurrent,
            status: 'True',
            reason: 'RunnerVersionCurrent',
            message: 'Runners are current',
          };
      if (version?.status !== next.status)
        conditions = setCondition(conditions, next, new Date(this.ctx.now()));
      if (outdated && version?.status !== 'False') {
        this.ctx.events?.record(
          ars,
          'Warning',
          ScaleSetReasons.outdated,
          'Runners report a deprecated runner version: the listener is stopped until the runner template changes',
        );
      }
    }
    conditions =
      mirroredRunnersHealthy(conditions, runnerSet.status?.conditions, new Date(this.ctx.now())) ??
      conditions;
    await this.patchStatus(ars, {
      phase,
      currentRunners: runnerSet.status?.currentReplicas ?? 0,
      pendingEphemeralRunners: runnerSet.status?.pendingEphemeralRunners ?? 0,
      runningEphemeralRunners: runnerSet.status?.runningEphemeralRunners ?? 0,
      failedEphemeralRunners: runnerSet.status?.failedEphemeralRunners ?? 0,
      ...(conditions ? { conditions } : {}),
    });
  }

  /** Sets one condition (its transition time now when its status moves), written only when it differs. */
  setCondition(
    ars: AutoscalingRunnerSet,
    condition: Omit<ScaleSetCondition, 'lastTransitionTime'>,
  ): Promise<void> {
    return this.patchStatus(ars, {
      conditions: setCondition(ars.status?.conditions, condition, new Date(this.ctx.now())),
    });
  }

  /** Patches the status fields given, only when one of them differs. */
  patchStatus(ars: AutoscalingRunnerSet, change: AutoscalingRunnerSetStatus): Promise<void> {
    return patchChangedStatus(this.ctx.client, AutoscalingRunnerSetKind, ars, change);
  }
}
