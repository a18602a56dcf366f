import { Annotations, AutoscalingRunnerSet, AutoscalingRunnerSetKind, ScaleSetReasons } from '@aro/api';
import type { ActionsServiceClient, RunnerScaleSet } from '@aro/actions';
import type { Logger } from '@aro/observability';
import { runnerGroupName, scaleSetIdOf, scaleSetName } from './runner-scale-set-resources';
import {
  findOrCreateScaleSet,
  refuseClaimedScaleSet,
  runnerGroupId,
  scaleSetById,
} from './scale-set-registration';
import { type ScaleSetContext } from './runner-scale-set-context';
import { ScaleSetLabelsSync } from './scale-set-labels';
import { ScaleSetMissingReports } from './scale-set-missing';
import type { ScaleSetStatusWriter } from './scale-set-status';
import { githubUrlLabels } from '../shared/scale-set-labels';

export class ScaleSetSync {
  /** The listener's reports of a scale set gone from the service (scale-set-missing.ts). */
  private readonly missingReports: ScaleSetMissingReports;
  private readonly labels: ScaleSetLabelsSync;

  constructor(
    private readonly ctx: ScaleSetContext,
    status: ScaleSetStatusWriter,
  ) {
    this.missingReports = new ScaleSetMissingReports(ctx.memory.slot('missing reports checked'));
    this.labels = new ScaleSetLabelsSync(ctx, status);
  }

  /**
   * Creates or adopts the scale set, checks now and then that the service still has it (and creates
   * it again if not), and keeps its runner group, name and labels equal to the spec.
   */
  async reconcile(
    ars: AutoscalingRunnerSet,
    key: string,
    actions: () => Promise<ActionsServiceClient>,
    callSignal: () => AbortSignal,
    log: Logger,
  ): Promise<{ ars: AutoscalingRunnerSet; scaleSetId: number }> {
    const namespace = ars.metadata?.namespace ?? '';
    const name = ars.metadata?.name ?? '';
    let id = scaleSetIdOf(ars);
    // The scale set as the service answered it in this pass, when it was asked (labels compare with it).
    let onService: RunnerScaleSet | undefined;
    if (
      id !== 0 &&
      (this.ctx.now() - (this.ctx.lastChecked.get(key) ?? 0) >= this.ctx.opts.scaleSetCheckIntervalMs ||
        (await this.missingReports.reported(this.ctx, ars, key, id)))
    ) {
      const found = await scaleSetById(await actions(), id, callSignal());
      this.ctx.lastChecked.set(key, this.ctx.now());
      onService = found;
      if (!found) {
        log.warn('The Actions service no longer has the scale set; creating it again', { scaleSetId: id });
        this.ctx.events?.record(
          ars,
          'Warning',
          ScaleSetReasons.scaleSetRecreated,
          `Runner scale set ${id} is gone from the Actions service (it deletes scale sets that stay offline); creating it again`,
        );
        id = 0;
      }
    }
    if (id === 0) {
      const client = await actions();
      const group = await runnerGroupId(client, ars.spec.runnerGroup, callSignal());
      const { scaleSet, created } = await findOrCreateScaleSet(client, ars, group.id, callSignal());
      if (!created) await refuseClaimedScaleSet(this.ctx.cache, ars, scaleSet, group.name);
      this.ctx.lastChecked.set(key, this.ctx.now());
      log.info(created ? 'Created the runner scale set' : 'Adopted an existing runner scale set', {
        scaleSetId: scaleSet.id,
        runnerGroup: group.name,
      });
      this.ctx.events?.record(
        ars,
        'Normal',
        created ? ScaleSetReasons.scaleSetCreated : ScaleSetReasons.scaleSetAdopted,
        `Runner scale set ${scaleSet.name} (ID ${scaleSet.id}) in runner group ${group.name}`,
      );
      const updated = await this.ctx.client.mergePatch<AutoscalingRunnerSet>(
        AutoscalingRunnerSetKind,
        namespace,
        name,
        {
          metadata: {
            labels: githubUrlLabels(ars.spec.githubConfigUrl),
            annotations: {
              [Annotations.runnerScaleSetId]: String(scaleSet.id),
              [Annotations.runnerScaleSetName]: scaleSet.name,
              [Annotations.runnerGroupName]: ars.spec.runnerGroup || group.name,
            },
          },
        },
      );
      const labelled = await this.labels.reconcile(updated, scaleSet.id, scaleSet, actions, callSignal, log);
      return { ars: labelled, scaleSetId: scaleSet.id };
    }

    const annotations = ars.metadata?.annotations ?? {};
    const wantGroup = runnerGroupName(ars);
    if ((annotations[Annotations.runnerGroupName] ?? '').toLowerCase() !== wantGroup.toLowerCase()) {
      const client = await actions();
      const group = await runnerGroupId(client, ars.spec.runnerGroup, callSignal());
      await client.updateRunnerScaleSet(id, { runnerGroupId: group.id }, { signal: callSignal() });
      log.info('Moved the scale set to another runner group', { scaleSetId: id, runnerGroup: wantGroup });
      this.ctx.events?.record(
        ars,
        'Normal',
        ScaleSetReasons.scaleSetUpdated,
        `Runner scale set ${id} moved to runner group ${wantGroup}`,
      );
      ars = await this.ctx.client.mergePatch<AutoscalingRunnerSet>(
        AutoscalingRunnerSetKind,
        namespace,
        name,
        {
          metadata: { annotations: { [Annotations.runnerGroupName]: wantGroup } },
        },
      );
    }
    const wantName = scaleSetName(ars);
    if ((ars.metadata?.annotations?.[Annotations.runnerScaleSetName] ?? '') !== wantName) {
      await (await actions()).updateRunnerScaleSet(id, { name: wantName }, { signal: callSignal() });
      log.info('Renamed the scale set', { scaleSetId: id, name: wantName });
      this.ctx.events?.record(
        ars,
        'Normal',
        ScaleSetReasons.scaleSetUpdated,
        `Runner scale set ${id} renamed to ${wantName}`,
      );
      ars = await this.ctx.client.mergePatch<AutoscalingRunnerSet>(
        AutoscalingRunnerSetKind,
        namespace,
        name,
        {
          metadata: { annotations: { [Annotations.runnerScaleSetName]: wantName } },
        },
      );
    }
    ars = await this.labels.reconcile(ars, id, onService, actions, callSignal, log);
    return { ars, scaleSetId: id };
  }
}
