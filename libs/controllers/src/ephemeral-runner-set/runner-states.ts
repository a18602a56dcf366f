import { Annotations, EphemeralRunner, EphemeralRunnerPhase, hasJob } from '@aro/api';

/**
 * The runners of one EphemeralRunnerSet sorted by what the set may do with them. A runner being
 * deleted counts nowhere else: it is on its way out, whatever its phase says.
 */
export interface RunnersByState {
  /** Pending, or no phase yet (just created). */
  pending: EphemeralRunner[];
  running: EphemeralRunner[];
  succeeded: EphemeralRunner[];
  failed: EphemeralRunner[];
  outdated: EphemeralRunner[];
  deleting: EphemeralRunner[];
  /** The highest `actions.github.com/patch-id` among the runners: the last listener patch acted on. */
  latestPatchId: number;
}

export function runnersByState(runners: readonly EphemeralRunner[]): RunnersByState {
  const states: RunnersByState = {
    pending: [],
    running: [],
    succeeded: [],
    failed: [],
    outdated: [],
    deleting: [],
    latestPatchId: 0,
  };
  for (const runner of runners) {
    const patchId = Number.parseInt(runner.metadata?.annotations?.[Annotations.patchId] ?? '', 10);
    if (Number.isFinite(patchId) && patchId > states.latestPatchId) states.latestPatchId = patchId;
    if (runner.metadata?.deletionTimestamp) {
      states.deleting.push(runner);
      continue;
    }
    switch (runner.status?.phase) {
      case EphemeralRunnerPhase.Running:
        states.running.push(runner);
        break;
      case EphemeralRunnerPhase.Succeeded:
        states.succeeded.push(runner);
        break;
      case EphemeralRunnerPhase.Failed:
        states.failed.push(runner);
        break;
      case EphemeralRunnerPhase.Outdated:
        states.outdated.push(runner);
        break;
      default:
        states.pending.push(runner);
    }
  }
  return states;
}

function createdAt(runner: EphemeralRunner): number {
  const ts = runner.metadata?.creationTimestamp;
  return ts ? new Date(ts).getTime() : 0;
}

function byAge(a: EphemeralRunner, b: EphemeralRunner): number {
  return createdAt(a) - createdAt(b) || (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? '');
}

/**
 * The runners a scale-down may take, in the order it takes them: Pending oldest first, then Running
 * oldest first. A Pending runner has no job yet and the oldest is the one most likely stuck; a Running
 * one may be about to get a job, so it goes last. Left out: runners that are not registered yet (their
 * registration may be being created, and could take a job the moment it exists) and runners the
 * listener has reported a job for.
 */
export function idleRunnerCandidates(states: RunnersByState): EphemeralRunner[] {
  const eligible = (r: EphemeralRunner): boolean => (r.status?.runnerId ?? 0) !== 0 && !hasJob(r);
  return [...[...states.pending].sort(byAge), ...[...states.running].sort(byAge)].filter(eligible);
}
