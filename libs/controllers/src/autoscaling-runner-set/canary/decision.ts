import type { CanaryResults, CanarySettings, CanaryStartFailures } from '@aro/api';

/** What a canary has shown so far: its jobs (start failures count as failed jobs) and the baseline's. */
export interface CanaryEvidence {
  jobs: number;
  failed: number;
  baselineJobs: number;
  baselineFailed: number;
  /** The first failure: a failed job, or a runner pod that never started. */
  firstFailure?: string;
}

export type CanaryVerdict = 'wait' | 'promote' | 'rollback';

/** The listener's job counts (when they are of this canary set) and the runners that never started. */
export function evidenceOf(
  canarySet: string,
  results: CanaryResults | undefined,
  startFailures: CanaryStartFailures | undefined,
): CanaryEvidence {
  const own = results?.set === canarySet ? results : undefined;
  const starts = startFailures?.count ?? 0;
  return {
    jobs: (own?.jobs ?? 0) + starts,
    failed: (own?.failed ?? 0) + starts,
    baselineJobs: own?.baselineJobs ?? 0,
    baselineFailed: own?.baselineFailed ?? 0,
    firstFailure: own?.firstFailure ?? (starts > 0 ? startFailures?.first : undefined),
  };
}

/**
 * The failure share the canary may reach: the previous template's over the same window (0 when it ran
 * no job then) plus the tolerance.
 */
export function allowedFailureShare(e: CanaryEvidence, s: Pick<CanarySettings, 'tolerancePercent'>): number {
  const baseline = e.baselineJobs > 0 ? e.baselineFailed / e.baselineJobs : 0;
  return baseline + s.tolerancePercent / 100;
}

/**
 * Promote once `jobs` canary jobs finished with a failure share not above the allowed one; roll back as
 * soon as the failures alone put it above, whatever the remaining jobs do (a bad image is taken back
 * after its first failures, not after every job of the window failed). Otherwise wait.
 */
export function judgeCanary(
  e: CanaryEvidence,
  s: Pick<CanarySettings, 'jobs' | 'tolerancePercent'>,
): CanaryVerdict {
  const allowed = allowedFailureShare(e, s);
  // A hair of slack: 1/3 against a tolerance of 33.3333...% must not flip on rounding.
  const above = (failed: number, total: number): boolean => total > 0 && failed / total > allowed + 1e-9;
  if (above(e.failed, Math.max(e.jobs, s.jobs))) return 'rollback';
  if (e.jobs < s.jobs) return 'wait';
  return above(e.failed, e.jobs) ? 'rollback' : 'promote';
}

/** "2/5 jobs failed" with the first failure, for Events and the condition. */
export function describeEvidence(e: CanaryEvidence): string {
  const baseline =
    e.baselineJobs > 0 ? `; previous template ${e.baselineFailed}/${e.baselineJobs} failed` : '';
  const first = e.firstFailure ? `; first failure: ${e.firstFailure}` : '';
  return `${e.failed}/${e.jobs} canary jobs failed${baseline}${first}`;
}
