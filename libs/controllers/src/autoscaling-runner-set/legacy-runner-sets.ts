import {
  AutoscalingRunnerSet,
  EphemeralRunner,
  EphemeralRunnerKind,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
} from '@aro/api';
import { isControlledBy, isNotFound } from '@aro/kube';
import type { Logger } from '@aro/observability';
import type { ScaleSetContext } from './runner-scale-set-context';

/**
 * EphemeralRunnerSets of the scale set other than the one serving it (currentRunnerSet in
 * runner-set-sync): what upstream's controller up to 0.14 left (it named each set
 * `<scale set>-<random>`, a new one per runner spec), found when ARO takes over such a cluster
 * (docs/migrating.md). ARO keeps one set per scale set, so these are retired as upstream retired a replaced set: told to want no runners (replicas 0, patch
 * 0: idle runners leave, busy ones finish their job), and deleted once no runner is left in them.
 * Their runners are neither recreated nor cut short, and nothing of them lingers.
 */
export class LegacyRunnerSets {
  constructor(private readonly ctx: ScaleSetContext) {}

  /**
   * True while a retired set is still there, to be looked at again. `current`: the set the scale set is
   * served by; `keep`: a canary set in use (a canary set no longer in use, promoted, rolled back or
   * opted out, retires the same way).
   */
  async retire(
    ars: AutoscalingRunnerSet,
    current: EphemeralRunnerSet,
    log: Logger,
    keep?: string,
  ): Promise<boolean> {
    const namespace = ars.metadata?.namespace ?? '';
    const legacy = (
      await this.ctx.cache.list<EphemeralRunnerSet>(EphemeralRunnerSetKind, { namespace })
    ).filter(
      (set) =>
        set.metadata?.name !== current.metadata?.name &&
        set.metadata?.name !== keep &&
        !set.metadata?.deletionTimestamp &&
        isControlledBy(set, ars),
    );
    if (legacy.length === 0) return false;
    const runners = await this.ctx.cache.list<EphemeralRunner>(EphemeralRunnerKind, { namespace });
    for (const set of legacy) {
      const name = set.metadata?.name ?? '';
      const left = runners.filter((r) => isControlledBy(r, set)).length;
      try {
        if (left === 0) {
          await this.ctx.client.delete(EphemeralRunnerSetKind, namespace, name, {
            preconditions: { uid: set.metadata?.uid },
          });
          log.info('Deleted an EphemeralRunnerSet left by an earlier controller; its runners are gone', {
            ephemeralRunnerSet: name,
          });
        } else if ((set.spec.replicas ?? 0) !== 0 || (set.spec.patchID ?? 0) !== 0) {
          await this.ctx.client.mergePatch(EphemeralRunnerSetKind, namespace, name, {
            spec: { replicas: 0, patchID: 0 },
          });
          log.info(
            'Retiring an EphemeralRunnerSet left by an earlier controller: its runners finish, none replaced',
            {
              ephemeralRunnerSet: name,
              runners: left,
            },
          );
        }
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
    return true;
  }
}
