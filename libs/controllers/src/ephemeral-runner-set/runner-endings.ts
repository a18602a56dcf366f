import {
  Annotations,
  EphemeralRunner,
  EphemeralRunnerPhase,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
  hasJob,
} from '@aro/api';
import type { KeyedStore, Predicate } from '@aro/kube';

/** Per set: the listener patch it stood under at its last event, and what the listener reported. */
export interface PatchStanding {
  patchId: number;
  /** Runners that ended after a job while `patchId` stood, with when their end was seen. */
  ended: Map<string, number>;
  /**
   * Runners whose JobCompleted the listener reported with one of its patches (the completed-runners
   * annotation), with when the report was seen. Kept across patches: a runner may end after a later
   * patch than the one that reported its job done. Pruned after {@link REPORT_MEMORY_MS}.
   */
  reported: Map<string, number>;
}

/** How long a reported completion is remembered: far past any runner's exit after its job. */
const REPORT_MEMORY_MS = 10 * 60_000;

/** A slot a patch still holds for a runner that ended under it: how many, and when the first is released. */
export interface HeldSlots {
  held: number;
  /** Milliseconds until the earliest held slot is released (0 when none is held). */
  releaseInMs: number;
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

function reportedNames(set: EphemeralRunnerSet): string[] {
  const value = set.metadata?.annotations?.[Annotations.completedRunners];
  return value ? value.split(',').filter((n) => n.length > 0) : [];
}

/**
 * Which runners ended after the set's listener patch arrived, as the watch events tell it, and for
 * how long their slots stay held.
 *
 * A listener patch carries `replicas` = minRunners + the jobs assigned when the listener computed it.
 * Whether a runner that ends after the patch arrived was in that count depends on which reached the
 * listener first: its JobCompleted (then the count already excludes its job, and its slot belongs to
 * the next job or to minRunners) or the statistics behind the patch (then its job was counted, and
 * replacing it makes a runner for a job already over: the 51st runner of a burst of 50, idle until the
 * listener's next empty poll). Only the listener knows the order, so:
 *
 * - ARO's listener names, with each patch, the runners whose JobCompleted it had read
 *   ({@link Annotations.completedRunners}). Such a runner holds no slot when it ends: its job was not
 *   counted. This is the common order (the listener's patch is faster than the runner's exit, the
 *   kubelet's report and the status write), and the runner is replaced at once.
 * - Any other runner that ended after a job under the standing patch holds its slot for at most
 *   `holdMs`: long enough for the listener's answer to the JobCompleted (a new patch, which is judged
 *   on the runners alone) to arrive, short enough that a count the listener never corrects (upstream's
 *   listener sends no names; an annotation lost to a relist) delays a job by seconds, not by a long
 *   poll. Holding a slot until the next patch, as this class once did, left the last job of a burst
 *   waiting ~50 s for the listener's next idle poll whenever the runner ended after the patch that had
 *   already left its job out.
 *
 * Events are the only record of the order; the cache a pass reads shows the end, not when it came.
 */
export class RunnerEndings {
  constructor(
    private readonly standings: KeyedStore<PatchStanding>,
    private readonly now: () => number,
    private readonly holdMs: number,
  ) {}

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
   * The slots patch `patchId` of set `key` still holds: runners that ended after a job while it stood,
   * that are no longer among `live` (the pending and running runners a pass counted), whose completion
   * the listener has not reported, and whose end was seen less than `holdMs` ago.
   */
  heldFor(key: string, patchId: number, live: ReadonlySet<string>): HeldSlots {
    const standing = this.standings.get(key);
    if (!standing || patchId === 0 || standing.patchId !== patchId) return { held: 0, releaseInMs: 0 };
    const now = this.now();
    let held = 0;
    let releaseInMs = Number.POSITIVE_INFINITY;
    for (const [name, endedAt] of standing.ended) {
      if (live.has(name) || standing.reported.has(name)) continue;
      const left = endedAt + this.holdMs - now;
      if (left <= 0) continue;
      held++;
      releaseInMs = Math.min(releaseInMs, left);
    }
    return { held, releaseInMs: held > 0 ? releaseInMs : 0 };
  }

  private stand(set: EphemeralRunnerSet): boolean {
    // A set on its way out is forgotten by its last pass; an entry made now would outlive it.
    if (set.metadata?.deletionTimestamp) return true;
    const key = `${set.metadata?.namespace ?? ''}/${set.metadata?.name ?? ''}`;
    const patchId = set.spec.patchID ?? 0;
    const now = this.now();
    let standing = this.standings.get(key);
    if (!standing) {
      standing = { patchId, ended: new Map(), reported: new Map() };
      this.standings.set(key, standing);
    } else if (standing.patchId !== patchId) {
      standing.patchId = patchId;
      standing.ended = new Map();
    }
    for (const [name, seenAt] of standing.reported) {
      if (now - seenAt > REPORT_MEMORY_MS) standing.reported.delete(name);
    }
    for (const name of reportedNames(set)) {
      if (!standing.reported.has(name)) standing.reported.set(name, now);
    }
    return true;
  }

  private ended(runner: EphemeralRunner): void {
    const key = owningSetKey(runner);
    // Only a set already seen: a runner's event after its set was forgotten must not bring it back.
    const standing = key === undefined ? undefined : this.standings.get(key);
    const name = runner.metadata?.name ?? '';
    if (standing && standing.patchId !== 0 && !standing.ended.has(name)) standing.ended.set(name, this.now());
  }
}
