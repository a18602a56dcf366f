import {
  Annotations,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  DEFAULT_RUNNER_GROUP,
  type EphemeralRunnerSet,
  EphemeralRunnerSetKind,
  ScaleSetReasons,
} from '@aro/api';
import {
  type Released,
  Result,
  deleteIgnoringNotFound,
  isControlledBy,
  released,
  requeueAfter,
} from '@aro/kube';
import type { Logger } from '@aro/observability';
import { isActionsNotFound } from '@aro/actions';
import { configHolderOfScaleSet } from '@aro/secrets';
import { removeCleanupProtection } from './cleanup-protection';
import { classifyScaleSetFailure } from '../shared/failure-reasons';
import { scaleSetIdOf } from './runner-scale-set-resources';
import { runnerGroupId } from './scale-set-registration';
import type { ScaleSetContext, ScaleSetPass } from './runner-scale-set-context';
import type { ListenerSync } from './listener-sync';
import type { ScaleSetStatusWriter } from './scale-set-status';
import { deleteCanarySets } from './canary/canary-cleanup';

export class ScaleSetFinalizer {
  constructor(
    private readonly ctx: ScaleSetContext,
    private readonly listener: ListenerSync,
    private readonly status: ScaleSetStatusWriter,
  ) {}

  /**
   * Deletion, in upstream's order: the listener (so nothing scales any more), the EphemeralRunnerSet
   * and its runners (waiting for busy ones), the scale set on the service, the chart's cleanup
   * protection on the objects it created for this set, then the finalizer.
   */
  async finalize(
    { obj: ars, key, log }: ScaleSetPass,
    callSignal: () => AbortSignal,
  ): Promise<Result | Released> {
    const namespace = ars.metadata?.namespace ?? '';
    const name = ars.metadata?.name ?? '';
    // Every listener of the set, whatever its name (upstream's, an older ARO's): one left running
    // would go on scaling a runner set that is being deleted, and stay behind once the set is gone.
    const listeners = await this.listener.delete(ars, log, { live: true });
    if (listeners.length > 0) {
      log.info('Waiting for the listener to go', {
        listeners: listeners.map((l) => l.metadata?.name ?? '').join(','),
      });
      return requeueAfter(this.ctx.opts.deletionPollMs);
    }
    // Every set of the scale set: the one named after it, and any `<set>-<random>` of upstream 0.14
    // still serving it (taken over) or retiring. Read live: the scale set goes from the service next,
    // and a set the cache had not shown yet would keep registrations of a scale set that is gone.
    const sets = (
      await this.ctx.client.list<EphemeralRunnerSet>(EphemeralRunnerSetKind, { namespace })
    ).filter((set) => set.metadata?.name === name || isControlledBy(set, ars));
    if (sets.length > 0) {
      for (const set of sets.filter((x) => !x.metadata?.deletionTimestamp)) {
        await deleteIgnoringNotFound(
          this.ctx.client,
          EphemeralRunnerSetKind,
          namespace,
          set.metadata?.name ?? '',
        );
      }
      log.info('Waiting for the EphemeralRunnerSet and its runners to go', {
        ephemeralRunnerSets: sets.map((x) => x.metadata?.name ?? '').join(','),
      });
      return requeueAfter(this.ctx.opts.deletionPollMs);
    }
    if (await deleteCanarySets(this.ctx, ars, log)) return requeueAfter(this.ctx.opts.deletionPollMs);
    const id = scaleSetIdOf(ars) || (await this.scaleSetOfDeletedSet(ars, callSignal, log));
    if (id !== 0) {
      try {
        const client = await this.ctx.resolver.getActionsClient(configHolderOfScaleSet(ars), callSignal());
        await client.deleteRunnerScaleSet(id, { signal: callSignal() });
        log.info('Deleted the runner scale set from the Actions service', { scaleSetId: id });
        this.ctx.events?.record(
          ars,
          'Normal',
          ScaleSetReasons.scaleSetDeleted,
          `Runner scale set ${id} deleted from the Actions service`,
        );
      } catch (err) {
        // Already gone from the service (removed there, or by an earlier pass): nothing left to delete.
        if (!isActionsNotFound(err)) return this.status.recordFailure(ars, key, err, log);
      }
      // Before the ID goes: a failure here is retried with the ID still known (the delete then
      // answers 404).
      await this.ctx.registeredScaleSets?.forget(namespace, id, callSignal());
      // Both go: a pass after this one (the cleanup protection below can be cut short) must see a set
      // with no scale set left, not one that lost its ID and would be looked up by name.
      await this.ctx.client.mergePatch(AutoscalingRunnerSetKind, namespace, name, {
        metadata: {
          annotations: { [Annotations.runnerScaleSetId]: null, [Annotations.runnerScaleSetName]: null },
        },
      });
    }
    await removeCleanupProtection(this.ctx.client, ars, log);
    log.info('Everything the deleted AutoscalingRunnerSet held is released; removing its finalizer');
    return released();
  }

  /**
   * The scale set of a deleted set that lost its `runner-scale-set-id` annotation (an edit, a
   * `kubectl replace`), looked up by the name it was registered under in its runner group, so that
   * it does not stay on the service (upstream leaves it there). Only a set that had one is looked up:
   * the `runner-scale-set-name` annotation is written with the ID. A failure is a Warning Event, not
   * a wait: without the ID the controller cannot know there is a scale set to delete, and a deletion
   * held up by a refused credential would hold up its namespace with it. 0 when there is none.
   */
  private async scaleSetOfDeletedSet(
    ars: AutoscalingRunnerSet,
    callSignal: () => AbortSignal,
    log: Logger,
  ): Promise<number> {
    const registeredName = ars.metadata?.annotations?.[Annotations.runnerScaleSetName];
    if (!registeredName) return 0;
    const group = ars.metadata?.annotations?.[Annotations.runnerGroupName] ?? ars.spec.runnerGroup;
    try {
      const client = await this.ctx.resolver.getActionsClient(configHolderOfScaleSet(ars), callSignal());
      const groupId = await runnerGroupId(
        client,
        group?.toLowerCase() === DEFAULT_RUNNER_GROUP.toLowerCase() ? undefined : group,
        callSignal(),
      );
      const found = await client.getRunnerScaleSet(groupId.id, registeredName, { signal: callSignal() });
      if (found) {
        log.info('Found the scale set of a deleted set without its ID annotation by name', {
          scaleSetId: found.id,
          scaleSetName: registeredName,
        });
      }
      return found?.id ?? 0;
    } catch (err) {
      const failure = classifyScaleSetFailure(err, ars.spec.proxy);
      log.warn('Cannot look up the scale set of a deleted set without its ID; deleting the set without it', {
        reason: failure.reason,
        scaleSetName: registeredName,
        err: failure.message,
      });
      this.ctx.events?.record(
        ars,
        'Warning',
        failure.reason,
        `Runner scale set ${registeredName} could not be looked up to delete it (the set has no runner-scale-set-id annotation): ${failure.message}`,
      );
      return 0;
    }
  }
}
