import { Annotations, AutoscalingRunnerSet, EphemeralRunnerSet, EphemeralRunnerSetKind } from '@aro/api';
import type { KeyedStore } from '@aro/kube';
import type { ScaleSetContext } from './runner-scale-set-context';

/**
 * The listener's word that the Actions service no longer has the set's scale set: it annotates the
 * EphemeralRunnerSet (which it may patch, and whose changes wake the set) with the ID its session
 * create got a 404 for. The set then checks at once instead of at its periodic check (5 min), and
 * creates the scale set again within seconds. Each report is checked once: a stale annotation (a
 * listener wrong about a scale set the service does have) costs one lookup, not one per pass.
 */
export class ScaleSetMissingReports {
  /** `checked` is a slot of the reconciler's per-set memory: it goes when the set does. */
  constructor(private readonly checked: KeyedStore<number>) {}

  /** Whether the listener reported scale set `id` missing and that report has not been checked yet. */
  async reported(
    ctx: Pick<ScaleSetContext, 'cache'>,
    ars: AutoscalingRunnerSet,
    key: string,
    id: number,
  ): Promise<boolean> {
    if (this.checked.get(key) === id) return false;
    let runnerSet: EphemeralRunnerSet;
    try {
      runnerSet = await ctx.cache.get<EphemeralRunnerSet>(
        EphemeralRunnerSetKind,
        ars.metadata?.namespace ?? '',
        ars.metadata?.name ?? '',
      );
    } catch {
      return false;
    }
    if (runnerSet.metadata?.annotations?.[Annotations.scaleSetMissing] !== String(id)) return false;
    this.checked.set(key, id);
    return true;
  }
}
