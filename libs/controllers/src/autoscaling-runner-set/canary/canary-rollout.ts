import {
  CANARY_CONDITION,
  CanaryAnnotations,
  CanaryReasons,
  type AutoscalingRunnerSet,
  EphemeralRunner,
  EphemeralRunnerKind,
  EphemeralRunnerPhase,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
  type EphemeralRunnerSpec,
  canaryReservedRunners,
  canaryRunnerSetName,
  canarySettingsOf,
  parseCanaryResults,
  parseCanaryStartFailures,
  runnerSpecHash,
} from '@aro/api';
import { isControlledBy, isNotFound } from '@aro/kube';
import type { Logger } from '@aro/observability';
import { buildEphemeralRunnerSet } from '../runner-scale-set-resources';
import type { ScaleSetContext } from '../runner-scale-set-context';
import type { ScaleSetStatusWriter } from '../scale-set-status';
import { findCondition } from '../../shared/conditions';
import { describeEvidence, evidenceOf, judgeCanary } from './decision';
import { CanaryMetrics } from './canary-metrics';

/** What the reconciler does with a runner spec change this pass. */
export interface CanaryStep {
  /** True: the set's runner spec stays as it is (a canary runs, or the change was rolled back). */
  holdBack: boolean;
  /** The canary EphemeralRunnerSet in use, which the retirement of other sets must leave alone. */
  keep?: string;
}

const PROCEED: CanaryStep = { holdBack: false };

/** `<hash> promoted|rolled-back` from the set's EphemeralRunnerSet. */
function verdictOf(runnerSet: EphemeralRunnerSet): { hash: string; verdict: string } | undefined {
  const [hash, verdict] = (runnerSet.metadata?.annotations?.[CanaryAnnotations.verdict] ?? '').split(' ');
  return hash && verdict ? { hash, verdict } : undefined;
}

/** The runner container's image (else the first container's), to name a change by what people changed. */
export function imageOf(spec: EphemeralRunnerSpec | undefined): string {
  const containers = spec?.spec?.containers ?? [];
  return (containers.find((c) => c.name === 'runner') ?? containers[0])?.image ?? 'no image';
}

/**
 * A runner spec change of a set that opted in: tried on a canary EphemeralRunnerSet of a few runners
 * while the set's own keeps the previous spec, judged on job results, then promoted (the normal
 * roll-out proceeds) or rolled back (the canary set drains through the retirement of extra sets; the
 * previous spec stays). The verdict is kept on the set's EphemeralRunnerSet, so a rolled-back spec is
 * not tried again until the template changes once more, and a restart resumes where it was.
 */
export class CanaryRollout {
  constructor(
    private readonly ctx: ScaleSetContext,
    private readonly status: ScaleSetStatusWriter,
    private readonly metrics: CanaryMetrics = new CanaryMetrics(),
  ) {}

  async reconcile(
    ars: AutoscalingRunnerSet,
    runnerSet: EphemeralRunnerSet,
    desired: EphemeralRunnerSpec,
    log: Logger,
  ): Promise<CanaryStep> {
    const { settings, problem } = canarySettingsOf(ars.metadata?.annotations, ars.spec.maxRunners);
    if (problem) {
      await this.setCondition(
        ars,
        'False',
        CanaryReasons.invalid,
        `${problem}; changes roll out without canary`,
      );
      await this.reserve(runnerSet, await this.canaryRunnersLeft(ars));
      return PROCEED;
    }
    if (!settings) {
      await this.reserve(runnerSet, await this.canaryRunnersLeft(ars));
      return PROCEED;
    }
    const current = runnerSet.spec.ephemeralRunnerSpec;
    const hash = runnerSpecHash(desired);
    // A new scale set ID (the service lost it) is no template change: nothing to try it on.
    if (runnerSpecHash(current) === hash || current?.runnerScaleSetId !== desired.runnerScaleSetId) {
      await this.reserve(runnerSet, await this.canaryRunnersLeft(ars));
      return PROCEED;
    }
    const verdict = verdictOf(runnerSet);
    if (verdict?.hash === hash) {
      await this.reserve(runnerSet, await this.canaryRunnersLeft(ars));
      return verdict.verdict === 'promoted' ? PROCEED : { holdBack: true };
    }

    const namespace = ars.metadata?.namespace ?? '';
    const name = canaryRunnerSetName(runnerSet.metadata?.name ?? '', hash);
    const change = `runner spec ${hash} (image ${imageOf(desired)})`;
    // The reservation lands before the canary set exists, so the set never makes runners for a count
    // the canary runners are about to take.
    await this.reserve(runnerSet, settings.runners + (await this.canaryRunnersLeft(ars, name)));
    const canary = await this.ensureCanarySet(ars, desired, name, hash, settings.runners, log);
    const evidence = evidenceOf(
      name,
      parseCanaryResults(runnerSet.metadata?.annotations?.[CanaryAnnotations.results]),
      parseCanaryStartFailures(canary?.metadata?.annotations?.[CanaryAnnotations.startFailures]),
    );
    const judged = judgeCanary(evidence, settings);
    const arsName = ars.metadata?.name ?? '';
    if (judged === 'wait') {
      this.metrics.inProgress(namespace, arsName);
      await this.setCondition(
        ars,
        'True',
        CanaryReasons.inProgress,
        // Canary counts only: the baseline moves with every job of the other runners, and a message
        // that moved with it would cost a status write per job of the whole set.
        `Trying ${change} on ${settings.runners} canary runner(s): ${evidence.jobs}/${settings.jobs} canary jobs finished, ${evidence.failed} failed`,
      );
      return { holdBack: true, keep: name };
    }
    const promoted = judged === 'promote';
    await this.ctx.client.mergePatch(EphemeralRunnerSetKind, namespace, runnerSet.metadata?.name ?? '', {
      metadata: {
        annotations: {
          [CanaryAnnotations.verdict]: `${hash} ${promoted ? 'promoted' : 'rolled-back'}`,
        },
      },
    });
    const message = promoted
      ? `Promoted ${change}: ${describeEvidence(evidence)}; it rolls out to every runner`
      : `Rolled back ${change}: ${describeEvidence(evidence)}; the previous runner spec stays and the canary runners drain`;
    this.ctx.events?.record(
      ars,
      promoted ? 'Normal' : 'Warning',
      promoted ? CanaryReasons.promoted : CanaryReasons.rolledBack,
      message,
    );
    this.metrics.verdict(namespace, arsName, promoted ? 'promoted' : 'rolled_back');
    await this.setCondition(
      ars,
      'False',
      promoted ? CanaryReasons.promoted : CanaryReasons.rolledBack,
      message,
    );
    (promoted ? log.info : log.warn).call(log, promoted ? 'Canary promoted' : 'Canary rolled back', {
      runnerSpecHash: hash,
      image: imageOf(desired),
      jobs: evidence.jobs,
      failed: evidence.failed,
      baselineJobs: evidence.baselineJobs,
      baselineFailed: evidence.baselineFailed,
    });
    return promoted ? PROCEED : { holdBack: true };
  }

  /** The canary set of `hash`, created with `runners` replicas (patch 0: kept at that count). */
  private async ensureCanarySet(
    ars: AutoscalingRunnerSet,
    desired: EphemeralRunnerSpec,
    name: string,
    hash: string,
    runners: number,
    log: Logger,
  ): Promise<EphemeralRunnerSet | undefined> {
    const namespace = ars.metadata?.namespace ?? '';
    try {
      const found = await this.ctx.cache.get<EphemeralRunnerSet>(EphemeralRunnerSetKind, namespace, name);
      if (found.metadata?.deletionTimestamp) return found;
      if ((found.spec.replicas ?? 0) !== runners || (found.spec.patchID ?? 0) !== 0) {
        await this.ctx.client.mergePatch(EphemeralRunnerSetKind, namespace, name, {
          spec: { replicas: runners, patchID: 0 },
        });
      }
      return found;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    const set = buildEphemeralRunnerSet(
      ars,
      desired.runnerScaleSetId ?? 0,
      this.ctx.opts.excludeLabelPropagationPrefixes,
    );
    set.metadata = {
      ...set.metadata,
      name,
      annotations: { ...set.metadata?.annotations, [CanaryAnnotations.canaryOf]: hash },
    };
    set.spec = { ...set.spec, replicas: runners, patchID: 0, ephemeralRunnerSpec: desired };
    await this.ctx.client.create(EphemeralRunnerSetKind, set);
    this.ctx.events?.record(
      ars,
      'Normal',
      CanaryReasons.inProgress,
      `Trying runner spec ${hash} (image ${imageOf(desired)}) on ${runners} canary runner(s) of EphemeralRunnerSet ${name}`,
    );
    log.info('Created a canary EphemeralRunnerSet', {
      ephemeralRunnerSet: name,
      runners,
      runnerSpecHash: hash,
    });
    return undefined;
  }

  /**
   * The runners canary sets of `ars` hold or are about to make (each set's replicas, or its live
   * runners if more: a promoted or rolled-back canary set drains, its busy runners finishing their
   * jobs), other than `except`'s. They stay reserved until they are gone, so that the set's own runners
   * and the canary runners never exceed maxRunners together, during a roll-out nor after its verdict.
   */
  private async canaryRunnersLeft(ars: AutoscalingRunnerSet, except?: string): Promise<number> {
    const namespace = ars.metadata?.namespace ?? '';
    const canarySets = (
      await this.ctx.cache.list<EphemeralRunnerSet>(EphemeralRunnerSetKind, { namespace })
    ).filter((set) => isCanarySet(set) && set.metadata?.name !== except && isControlledBy(set, ars));
    if (canarySets.length === 0) return 0;
    const runners = await this.ctx.cache.list<EphemeralRunner>(EphemeralRunnerKind, { namespace });
    const ended = (r: EphemeralRunner): boolean =>
      !!r.metadata?.deletionTimestamp ||
      r.status?.phase === EphemeralRunnerPhase.Succeeded ||
      r.status?.phase === EphemeralRunnerPhase.Failed;
    let left = 0;
    for (const set of canarySets) {
      const live = runners.filter((r) => isControlledBy(r, set) && !ended(r)).length;
      left += Math.max(set.metadata?.deletionTimestamp ? 0 : (set.spec.replicas ?? 0), live);
    }
    return left;
  }

  /**
   * Records on the set's EphemeralRunnerSet how many of the listener's count the canary runners take
   * (0: none, the annotation removed); written only when it differs, so a set without canary pays nothing.
   */
  private async reserve(runnerSet: EphemeralRunnerSet, runners: number): Promise<void> {
    if (canaryReservedRunners(runnerSet.metadata?.annotations) === runners) return;
    await this.ctx.client.mergePatch(
      EphemeralRunnerSetKind,
      runnerSet.metadata?.namespace ?? '',
      runnerSet.metadata?.name ?? '',
      { metadata: { annotations: { [CanaryAnnotations.reserved]: runners > 0 ? String(runners) : null } } },
    );
  }

  private async setCondition(
    ars: AutoscalingRunnerSet,
    status: 'True' | 'False',
    reason: string,
    message: string,
  ): Promise<void> {
    const previous = findCondition(ars.status?.conditions, CANARY_CONDITION);
    if (previous?.status === status && previous.reason === reason && previous.message === message) return;
    await this.status.setCondition(ars, { type: CANARY_CONDITION, status, reason, message });
  }
}

/** Whether an EphemeralRunnerSet is a canary set (its runners are counted apart, see the listener). */
export function isCanarySet(set: EphemeralRunnerSet): boolean {
  return !!set.metadata?.annotations?.[CanaryAnnotations.canaryOf];
}
