import { isDeepStrictEqual } from 'node:util';
import {
  AutoscalingRunnerSet,
  AutoscalingRunnerSetPhase,
  CanaryAnnotations,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
  ScaleSetConditionTypes,
  ScaleSetReasons,
  meaningOf,
} from '@aro/api';
import { type Reader, Result, isControlledBy, isNotFound, requeueAfter } from '@aro/kube';
import type { Logger } from '@aro/observability';
import { buildEphemeralRunnerSet, desiredRunnerSetMeta } from './runner-scale-set-resources';
import { type ScaleSetContext } from './runner-scale-set-context';
import type { ListenerSync } from './listener-sync';
import type { ScaleSetStatusWriter } from './scale-set-status';
import { findCondition } from '../shared/conditions';

/**
 * The EphemeralRunnerSet that serves the scale set: the one named after it (ARO's layout, and
 * upstream's since its main branch), else the newest live set the scale set controls. Upstream's
 * 0.14 releases name a set `<scale set>-<random>` and make a new one per runner spec; taking such an
 * install over, ARO keeps serving the newest of them instead of creating its own beside it, which
 * would retire that set and deregister its idle runners. Older ones are retired (legacy-runner-sets).
 */
export async function currentRunnerSet(
  cache: Reader,
  ars: AutoscalingRunnerSet,
): Promise<EphemeralRunnerSet | undefined> {
  const namespace = ars.metadata?.namespace ?? '';
  const name = ars.metadata?.name ?? '';
  try {
    return await cache.get<EphemeralRunnerSet>(EphemeralRunnerSetKind, namespace, name);
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  const owned = (await cache.list<EphemeralRunnerSet>(EphemeralRunnerSetKind, { namespace })).filter(
    // A canary set (canary-rollout.ts) serves only the change it tries, never the scale set.
    (set) =>
      !set.metadata?.deletionTimestamp &&
      isControlledBy(set, ars) &&
      set.metadata?.annotations?.[CanaryAnnotations.canaryOf] === undefined,
  );
  // Newest first, as upstream 0.14 picks its latest set; the name breaks a tie of the same second.
  // (A timestamp may arrive as a Date or as the string the API wrote: compared as instants.)
  const created = (set: EphemeralRunnerSet): number =>
    new Date(set.metadata?.creationTimestamp ?? 0).getTime();
  owned.sort(
    (a, b) =>
      created(b) - created(a) || String(b.metadata?.name ?? '').localeCompare(String(a.metadata?.name ?? '')),
  );
  return owned[0];
}

/** The set's EphemeralRunnerSet: created, its metadata kept, its runner spec updated (after a drain). */
export class RunnerSetSync {
  constructor(
    private readonly ctx: ScaleSetContext,
    private readonly listener: ListenerSync,
    private readonly status: ScaleSetStatusWriter,
  ) {}

  async reconcile(
    ars: AutoscalingRunnerSet,
    scaleSetId: number,
    log: Logger,
  ): Promise<EphemeralRunnerSet | 'created'> {
    const namespace = ars.metadata?.namespace ?? '';
    const found = await currentRunnerSet(this.ctx.cache, ars);
    if (!found) {
      await this.ctx.client.create(
        EphemeralRunnerSetKind,
        buildEphemeralRunnerSet(ars, scaleSetId, this.ctx.opts.excludeLabelPropagationPrefixes),
      );
      log.info('Created the EphemeralRunnerSet');
      return 'created';
    }
    let runnerSet = found;
    const name = runnerSet.metadata?.name ?? '';
    const meta = desiredRunnerSetMeta(ars, this.ctx.opts.excludeLabelPropagationPrefixes);
    const labelsDiffer = Object.entries(meta.labels).some(([k, v]) => runnerSet.metadata?.labels?.[k] !== v);
    const annotationsDiffer = Object.entries(meta.annotations).some(
      ([k, v]) => runnerSet.metadata?.annotations?.[k] !== v,
    );
    // By meaning, as the runner spec: upstream writes what ARO may leave out (empty maps).
    const runnerMetaDiffers = !isDeepStrictEqual(
      meaningOf(runnerSet.spec.ephemeralRunnerMetadata),
      meaningOf(ars.spec.ephemeralRunnerMetadata),
    );
    if (labelsDiffer || annotationsDiffer || runnerMetaDiffers) {
      runnerSet = await this.ctx.client.mergePatch<EphemeralRunnerSet>(
        EphemeralRunnerSetKind,
        namespace,
        name,
        {
          metadata: { labels: meta.labels, annotations: meta.annotations },
          spec: { ephemeralRunnerMetadata: ars.spec.ephemeralRunnerMetadata ?? null },
        },
      );
      log.info('Updated the metadata of the EphemeralRunnerSet');
    }
    return runnerSet;
  }

  /**
   * The runner spec changed while runners are pending or running. Upstream HEAD waits for them to
   * reach zero before patching the set in place; with the listener stopped nobody would ask the set
   * to let its idle runners go, so the set is told so (replicas 0, patch 0): idle runners leave,
   * busy ones finish their job, then the spec is patched and the listener comes back.
   */
  async drain(
    ars: AutoscalingRunnerSet,
    runnerSet: EphemeralRunnerSet,
    busy: number,
    log: Logger,
  ): Promise<Result> {
    log.info('Draining runners before updating the runner spec', { pendingOrRunning: busy });
    const draining = findCondition(ars.status?.conditions, ScaleSetConditionTypes.scaleSetReady);
    if (draining?.reason !== ScaleSetReasons.drainingForUpdate) {
      this.ctx.events?.record(
        ars,
        'Normal',
        ScaleSetReasons.drainingForUpdate,
        `Waiting for ${busy} runner(s) to finish before updating the runner spec`,
      );
    }
    await this.listener.delete(ars, log);
    if ((runnerSet.spec.replicas ?? 0) !== 0 || runnerSet.spec.patchID !== 0) {
      await this.ctx.client.mergePatch(
        EphemeralRunnerSetKind,
        runnerSet.metadata?.namespace ?? '',
        runnerSet.metadata?.name ?? '',
        {
          spec: { replicas: 0, patchID: 0 },
        },
      );
    }
    await this.status.updateStatus(ars, runnerSet, AutoscalingRunnerSetPhase.Pending);
    return requeueAfter(this.ctx.opts.drainPollMs);
  }

  async replaceRunnerSpec(
    runnerSet: EphemeralRunnerSet,
    spec: EphemeralRunnerSet['spec']['ephemeralRunnerSpec'],
    log: Logger,
  ): Promise<void> {
    // A PUT, not a merge patch: fields removed from the template must go from the runner spec too.
    const live = await this.ctx.client.get<EphemeralRunnerSet>(
      EphemeralRunnerSetKind,
      runnerSet.metadata?.namespace ?? '',
      runnerSet.metadata?.name ?? '',
    );
    await this.ctx.client.replace(EphemeralRunnerSetKind, {
      ...live,
      spec: { ...live.spec, ephemeralRunnerSpec: spec },
    });
    log.info('Updated the runner spec of the EphemeralRunnerSet in place');
  }
}
