import {
  EphemeralRunner,
  EphemeralRunnerPhase,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
  hasJob,
} from '@aro/api';
import type { KeyedStore, Predicate } from '@aro/kube';

/** Per set: the listener patch it stood under at its last event, and the runners that ended under it. */
export interface PatchStanding {
  patchId: number;
  /** Runners that ended after a job while `patchId` stood. */
  ended: Set<string>;
}

function ended(runner: EphemeralRunner): boolean {
  return !!runner.metadata?.deletionTimestamp || runner.status?.phase === EphemeralRunnerPhase.Succeeded;
}

/**
 * A runner whose job the listener counted: it succeeded, or it had a job. A Failed one is not: the
 * set replaces it on its own account (with backoff), whatever the patch.
 */
function servedAJob(runner: EphemeralRunner): boolean {
  const phase = runner.status?.phase;
  return (
    phase !== EphemeralRunnerPhase.Failed && (phase === EphemeralRunnerPhase.Succeeded || hasJob(runner))
  );
}

function owningSetKey(runner: EphemeralRunner): string | undefined {
  const owner = runner.metadata?.ownerReferences?.find(
    (o) => o.controller && o.kind === EphemeralRunnerSetKind.kind,
  );
  return owner ? `${runner.metadata?.namespace ?? ''}/${owner.name}` : undefined;
}

/**
 * Which runners ended after the set's listener patch arrived, as the watch events tell it.
 *
 * The listener's count behind a patch includes the jobs assigned when it computed it, running ones
 * too. A pass that acts on the patch the moment it arrives counts the runners of those jobs; a pass
 * that comes later (the set's queue busy with the pass before, or waiting for the cache) could find one
 * of them finished and gone, and make a runner for a job that is already over: the 51st runner of a
 * burst of 50, idle until the listener's next empty poll. So a patch is judged against the runners as
 * they were when it arrived: those that ended since still hold their slot for it, and a later patch
 * (the listener's count after the job completed) is judged on the runners alone again. Events are the
 * only record of that order; the cache a pass reads shows the end, not when it came.
 */
export class RunnerEndings {
  constructor(private readonly standings: KeyedStore<PatchStanding>) {}

  /** For the set's own events: remembers the patch each live set stands under (never filters). */
  readonly setEvents: Predicate<EphemeralRunnerSet> = {
    create: (set) => this.stand(set),
    update: (_old, set) => this.stand(set),
  };

  /** For the runners' events: notes each runner that ends under its set's standing patch (never filters). */
  readonly runnerEvents: Predicate<EphemeralRunner> = {
    update: (old, runner) => {
      if (ended(runner) && !(old && ended(old)) && servedAJob(runner)) this.ended(runner);
      return true;
    },
    delete: (runner) => {
      if (servedAJob(runner)) this.ended(runner);
      return true;
    },
  };

  /**
   * How many runners ended while patch `patchId` stood on set `key` and are no longer among `live`
   * (the pending and running runners a pass counted): slots the patch still holds for their jobs.
   */
  heldFor(key: string, patchId: number, live: ReadonlySet<string>): number {
    const standing = this.standings.get(key);
    if (!standing || patchId === 0 || standing.patchId !== patchId) return 0;
    let held = 0;
    for (const name of standing.ended) if (!live.has(name)) held++;
    return held;
  }

  private stand(set: EphemeralRunnerSet): boolean {
    // A set on its way out is forgotten by its last pass; an entry made now would outlive it.
    if (set.metadata?.deletionTimestamp) return true;
    const key = `${set.metadata?.namespace ?? ''}/${set.metadata?.name ?? ''}`;
    const patchId = set.spec.patchID ?? 0;
    if (this.standings.get(key)?.patchId !== patchId) this.standings.set(key, { patchId, ended: new Set() });
    return true;
  }

  private ended(runner: EphemeralRunner): void {
    const key = owningSetKey(runner);
    // Only a set already seen: a runner's event after its set was forgotten must not bring it back.
    const standing = key === undefined ? undefined : this.standings.get(key);
    if (standing && standing.patchId !== 0) standing.ended.add(runner.metadata?.name ?? '');
  }
}
