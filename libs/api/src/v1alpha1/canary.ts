/*
 * Canary roll-outs of a runner template change (ARO; upstream's controller ignores every key here).
 *
 * A set opts in with the `canary-runners` annotation. While a change is tried, the set's own
 * EphemeralRunnerSet keeps the previous runner spec and a second one, `<set>-canary-<hash>`, runs the
 * new spec with a fixed number of runners. The listener counts job results of both (it tells canary
 * runners by their name) and writes them, on the scale patch it writes anyway, as the `canary-results`
 * annotation of the set's EphemeralRunnerSet; the controller judges them and promotes or rolls back.
 */

/** On the AutoscalingRunnerSet, set by the scale-set chart's `canary` values. */
export const CanaryAnnotations = {
  /** Runners trying a change: a whole number, or `N%` of maxRunners (at least 1). Absent or 0: off. */
  runners: 'actions.github.com/canary-runners',
  /** Canary jobs to finish before the change is judged; default {@link DEFAULT_CANARY_JOBS}. */
  jobs: 'actions.github.com/canary-jobs',
  /**
   * Percentage points the canary's failure share may exceed the previous template's before the change
   * is rolled back; default 0 (not worse than the previous template).
   */
  tolerancePercent: 'actions.github.com/canary-tolerance-percent',
  /** On a canary EphemeralRunnerSet: the runner spec hash it tries. */
  canaryOf: 'actions.github.com/canary-of',
  /**
   * On the set's EphemeralRunnerSet, written by the controller: `<runner spec hash> promoted` or
   * `<runner spec hash> rolled-back`, the verdict on the last change tried (kept across restarts).
   */
  verdict: 'actions.github.com/canary-verdict',
  /** On the set's EphemeralRunnerSet, written by the listener: {@link CanaryResults} as JSON. */
  results: 'actions.github.com/canary-results',
  /**
   * On the set's EphemeralRunnerSet, written by the controller while a canary set runs: how many of the
   * listener's count the canary runners take, so the two sets together never exceed `maxRunners`.
   */
  reserved: 'actions.github.com/canary-reserved-runners',
  /** On a canary EphemeralRunnerSet, written by its controller: {@link CanaryStartFailures} as JSON. */
  startFailures: 'actions.github.com/canary-start-failures',
} as const;

export const DEFAULT_CANARY_JOBS = 5;

/** Job results since the first canary job the listener saw, for one canary EphemeralRunnerSet. */
export interface CanaryResults {
  /** The canary EphemeralRunnerSet the counts are of. */
  set: string;
  /** Jobs that finished on canary runners (succeeded or failed; canceled and skipped do not count). */
  jobs: number;
  failed: number;
  /** Jobs that finished on the previous template's runners over the same window. */
  baselineJobs: number;
  baselineFailed: number;
  /** The first failed canary job: its name, repository, runner and result. */
  firstFailure?: string;
}

/** Canary runners whose pod never started (the ERS deleted and replaced them). */
export interface CanaryStartFailures {
  count: number;
  first: string;
}

/** What a set asked for: runners (0 = off), jobs to judge, tolerance; or the problem with a value. */
export interface CanarySettings {
  runners: number;
  jobs: number;
  tolerancePercent: number;
}

export function canarySettingsOf(
  annotations: Record<string, string> | undefined,
  maxRunners: number | undefined,
): { settings?: CanarySettings; problem?: string } {
  const raw = annotations?.[CanaryAnnotations.runners]?.trim();
  if (!raw) return {};
  let runners: number;
  const percent = /^(\d+)%$/.exec(raw);
  if (percent) {
    const share = Number(percent[1]);
    if (share === 0) return {};
    runners = Math.max(1, Math.floor(((maxRunners ?? 0) * share) / 100));
  } else if (/^\d+$/.test(raw)) {
    runners = Number(raw);
    if (runners === 0) return {};
  } else {
    return { problem: `${CanaryAnnotations.runners} ${JSON.stringify(raw)} is neither N nor N%` };
  }
  const jobsRaw = annotations?.[CanaryAnnotations.jobs]?.trim();
  const jobs = jobsRaw === undefined || jobsRaw === '' ? DEFAULT_CANARY_JOBS : Number(jobsRaw);
  if (!Number.isInteger(jobs) || jobs < 1) {
    return { problem: `${CanaryAnnotations.jobs} ${JSON.stringify(jobsRaw)} is not a whole number above 0` };
  }
  const tolRaw = annotations?.[CanaryAnnotations.tolerancePercent]?.trim();
  const tolerancePercent = tolRaw === undefined || tolRaw === '' ? 0 : Number(tolRaw);
  if (!Number.isFinite(tolerancePercent) || tolerancePercent < 0 || tolerancePercent > 100) {
    return {
      problem: `${CanaryAnnotations.tolerancePercent} ${JSON.stringify(tolRaw)} is not a number from 0 to 100`,
    };
  }
  return { settings: { runners, jobs, tolerancePercent } };
}

/** The canary EphemeralRunnerSet of a set's runner spec hash; its runners are `<this>-runner-<id>`. */
export function canaryRunnerSetName(runnerSetName: string, specHash: string): string {
  return `${runnerSetName}-canary-${specHash.slice(0, 6)}`;
}

/**
 * The canary EphemeralRunnerSet a runner belongs to, read from its name alone (the listener may not
 * read objects), or undefined for a runner of the set itself.
 */
export function canarySetOfRunner(runnerSetName: string, runnerName: string): string | undefined {
  const prefix = `${runnerSetName}-canary-`;
  if (!runnerName.startsWith(prefix)) return undefined;
  const at = runnerName.lastIndexOf('-runner-');
  return at > prefix.length ? runnerName.slice(0, at) : undefined;
}

/** Reads an annotation holding JSON of an expected shape; undefined when absent or unreadable. */
export function parseCanaryResults(value: string | undefined): CanaryResults | undefined {
  if (!value) return undefined;
  try {
    const parsed = JSON.parse(value) as Partial<CanaryResults>;
    if (typeof parsed.set !== 'string') return undefined;
    const n = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : 0);
    return {
      set: parsed.set,
      jobs: n(parsed.jobs),
      failed: n(parsed.failed),
      baselineJobs: n(parsed.baselineJobs),
      baselineFailed: n(parsed.baselineFailed),
      ...(typeof parsed.firstFailure === 'string' ? { firstFailure: parsed.firstFailure } : {}),
    };
  } catch {
    return undefined;
  }
}

export function parseCanaryStartFailures(value: string | undefined): CanaryStartFailures | undefined {
  if (!value) return undefined;
  try {
    const parsed = JSON.parse(value) as Partial<CanaryStartFailures>;
    return typeof parsed.count === 'number' && parsed.count > 0
      ? { count: parsed.count, first: typeof parsed.first === 'string' ? parsed.first : '' }
      : undefined;
  } catch {
    return undefined;
  }
}

/** AutoscalingRunnerSet condition of a canary roll-out; its reason is the `Canary` printer column. */
export const CANARY_CONDITION = 'CanaryRollout';

/** Reasons of the canary condition and Events. */
export const CanaryReasons = {
  /** True: a change runs on the canary runners, the previous template on the rest. */
  inProgress: 'CanaryInProgress',
  /** False: the change passed and rolls out as UPDATE_STRATEGY says. */
  promoted: 'CanaryPromoted',
  /** False: the change failed; the previous template stays, the canary runners drain. */
  rolledBack: 'CanaryRolledBack',
  /** False: a canary annotation cannot be read; changes roll out as without canary. */
  invalid: 'CanaryInvalid',
} as const;

/** The runners of a set's count that its canary set takes (0 when none runs, or the value is not a count). */
export function canaryReservedRunners(annotations: Record<string, string> | undefined): number {
  const value = Number(annotations?.[CanaryAnnotations.reserved] ?? 0);
  return Number.isInteger(value) && value > 0 ? value : 0;
}
