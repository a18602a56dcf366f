import { evidenceOf, judgeCanary } from './decision';

const settings = { jobs: 5, tolerancePercent: 0 };
const evidence = (jobs: number, failed: number, baselineJobs = 0, baselineFailed = 0) => ({
  jobs,
  failed,
  baselineJobs,
  baselineFailed,
});

describe('judgeCanary', () => {
  it('waits for the jobs asked for while none failed', () => {
    expect(judgeCanary(evidence(0, 0), settings)).toBe('wait');
    expect(judgeCanary(evidence(4, 0), settings)).toBe('wait');
  });

  it('promotes once the jobs finished with no more failures than the previous template', () => {
    expect(judgeCanary(evidence(5, 0), settings)).toBe('promote');
    expect(judgeCanary(evidence(5, 1, 10, 2), settings)).toBe('promote');
  });

  it('rolls back at the first failure the previous template did not have', () => {
    expect(judgeCanary(evidence(1, 1), settings)).toBe('rollback');
    expect(judgeCanary(evidence(5, 2, 10, 2), settings)).toBe('rollback');
  });

  it('gives the tolerance on top of the baseline, and waits while the remaining jobs may still pass', () => {
    const tolerant = { jobs: 5, tolerancePercent: 20 };
    expect(judgeCanary(evidence(1, 1), tolerant)).toBe('wait');
    expect(judgeCanary(evidence(5, 1), tolerant)).toBe('promote');
    expect(judgeCanary(evidence(2, 2), tolerant)).toBe('rollback');
  });
});

describe('evidenceOf', () => {
  it('counts runners that never started as failed jobs, and ignores counts of another canary set', () => {
    const results = { set: 'a-canary-123456', jobs: 2, failed: 0, baselineJobs: 3, baselineFailed: 0 };
    const starts = { count: 1, first: 'runner a-canary-123456-runner-x: ErrImagePull' };
    expect(evidenceOf('a-canary-123456', results, starts)).toEqual({
      jobs: 3,
      failed: 1,
      baselineJobs: 3,
      baselineFailed: 0,
      firstFailure: starts.first,
    });
    expect(evidenceOf('a-canary-abcdef', results, undefined)).toEqual({
      jobs: 0,
      failed: 0,
      baselineJobs: 0,
      baselineFailed: 0,
      firstFailure: undefined,
    });
  });
});
