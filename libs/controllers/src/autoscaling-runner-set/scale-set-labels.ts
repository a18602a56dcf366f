import {
  Annotations,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  ScaleSetConditionTypes,
  ScaleSetReasons,
} from '@aro/api';
import type { ActionsServiceClient, RunnerScaleSet } from '@aro/actions';
import type { Logger } from '@aro/observability';
import { type ScaleSetContext } from './runner-scale-set-context';
import { scaleSetById, scaleSetLabelsOf } from './scale-set-registration';
import type { ScaleSetStatusWriter } from './scale-set-status';
import { findCondition } from '../shared/conditions';

/** Label names as the service matches them (`runs-on` is case-insensitive), sorted and joined. */
export function labelKey(labels: ReadonlyArray<{ name: string }> | undefined): string {
  return [...new Set((labels ?? []).map((l) => l.name.trim().toLowerCase()).filter((n) => n !== ''))]
    .sort()
    .join(',');
}

/**
 * Keeps the scale set's labels on the Actions service equal to the set's name and
 * `runnerScaleSetLabels`. Upstream sends labels only when it creates the scale set, so a label added to
 * a set later, or a set adopted from an earlier install, never reaches GitHub and jobs asking for it wait
 * for ever (upstream #4579).
 *
 * Compared where the scale set is already in hand (created, adopted, or read by the periodic check: no
 * extra call) and whenever the spec's labels differ from the ones last sent (the
 * `runner-scale-set-labels` annotation: one read, and one update when they differ). The service's answer
 * is checked: GHES before 3.18 keeps only the name and drops the rest without an error, which becomes
 * `ScaleSetLabelsCurrent=False` and a Warning Event naming the labels dropped, instead of a silent
 * difference. A refusal is not retried on every pass (the annotation records what was sent), only by the
 * periodic check and on the next change.
 */
export class ScaleSetLabelsSync {
  constructor(
    private readonly ctx: ScaleSetContext,
    private readonly status: ScaleSetStatusWriter,
  ) {}

  /**
   * `onService`: the scale set as the service answered it in this pass, when the pass has it; read
   * here only when the spec's labels changed since they were last sent.
   */
  async reconcile(
    ars: AutoscalingRunnerSet,
    scaleSetId: number,
    onService: RunnerScaleSet | undefined,
    actions: () => Promise<ActionsServiceClient>,
    callSignal: () => AbortSignal,
    log: Logger,
  ): Promise<AutoscalingRunnerSet> {
    const wanted = scaleSetLabelsOf(ars);
    const wantKey = labelKey(wanted);
    const sentKey = ars.metadata?.annotations?.[Annotations.runnerScaleSetLabels];
    if (!onService && sentKey === wantKey) return ars;
    const current = onService ?? (await scaleSetById(await actions(), scaleSetId, callSignal()));
    // Gone: the scale set sync creates it again (with these labels) on its next check.
    if (!current) return ars;

    let answered = current;
    if (labelKey(current.labels) !== wantKey) {
      answered = await (
        await actions()
      ).updateRunnerScaleSet(scaleSetId, { labels: wanted }, { signal: callSignal() });
      if (labelKey(answered.labels) === wantKey) {
        log.info('Updated the scale set labels', { scaleSetId, labels: wantKey });
        this.ctx.events?.record(
          ars,
          'Normal',
          ScaleSetReasons.scaleSetUpdated,
          `Runner scale set ${scaleSetId} labels set to ${wanted.map((l) => l.name).join(', ')}`,
        );
      }
    }
    ars = await this.record(ars, wantKey);
    await this.report(ars, scaleSetId, wanted, answered, log);
    return ars;
  }

  /** The labels sent, on the set, so later passes compare the spec with them without a call. */
  private async record(ars: AutoscalingRunnerSet, key: string): Promise<AutoscalingRunnerSet> {
    if (ars.metadata?.annotations?.[Annotations.runnerScaleSetLabels] === key) return ars;
    return this.ctx.client.mergePatch<AutoscalingRunnerSet>(
      AutoscalingRunnerSetKind,
      ars.metadata?.namespace ?? '',
      ars.metadata?.name ?? '',
      { metadata: { annotations: { [Annotations.runnerScaleSetLabels]: key } } },
    );
  }

  /**
   * The condition says whether the service holds the labels asked for; it is written only once they
   * differed, so a set whose labels were always right carries none (and costs no status write).
   */
  private async report(
    ars: AutoscalingRunnerSet,
    scaleSetId: number,
    wanted: ReadonlyArray<{ name: string }>,
    answered: RunnerScaleSet,
    log: Logger,
  ): Promise<void> {
    const previous = findCondition(ars.status?.conditions, ScaleSetConditionTypes.scaleSetLabelsCurrent);
    const held = new Set(labelKey(answered.labels).split(','));
    const dropped = wanted.map((l) => l.name).filter((n) => !held.has(n.trim().toLowerCase()));
    if (dropped.length === 0) {
      if (previous && previous.status !== 'True') {
        await this.status.setCondition(ars, {
          type: ScaleSetConditionTypes.scaleSetLabelsCurrent,
          status: 'True',
          reason: ScaleSetReasons.scaleSetLabelsCurrent,
          message: `Runner scale set ${scaleSetId} has the labels the set asks for`,
        });
      }
      return;
    }
    const message =
      `The Actions service kept runner scale set ${scaleSetId} without the label(s) ${dropped.join(', ')} ` +
      `(it holds ${(answered.labels ?? []).map((l) => l.name).join(', ') || 'none'}); jobs asking for ` +
      `them will not reach this set. GitHub Enterprise Server before 3.18 keeps only the scale set's name: ` +
      `use runs-on with the name (spec.runnerScaleSetName) there`;
    log.warn('The Actions service did not take the scale set labels', {
      scaleSetId,
      dropped: dropped.join(','),
    });
    if (previous?.status !== 'False' || previous.message !== message) {
      this.ctx.events?.record(ars, 'Warning', ScaleSetReasons.scaleSetLabelsRefused, message);
    }
    await this.status.setCondition(ars, {
      type: ScaleSetConditionTypes.scaleSetLabelsCurrent,
      status: 'False',
      reason: ScaleSetReasons.scaleSetLabelsRefused,
      message,
    });
  }
}
