import type { JobCompleted } from '@aro/actions/lean';
import { CanaryTally } from './canary-tally';

const done = (runnerName: string, result: string): JobCompleted =>
  ({
    messageType: 'JobCompleted',
    runnerName,
    result,
    jobDisplayName: 'build',
    ownerName: 'octo',
    repositoryName: 'app',
  }) as JobCompleted;

describe('CanaryTally', () => {
  it('writes nothing until a canary runner had a job', () => {
    const tally = new CanaryTally('arc');
    tally.jobStarted({ runnerName: 'arc-runner-abcde' });
    tally.jobCompleted(done('arc-runner-abcde', 'failed'));
    expect(tally.annotation()).toBeUndefined();
  });

  it('counts canary and baseline jobs from the first canary job on, with the first canary failure', () => {
    const tally = new CanaryTally('arc');
    tally.jobStarted({ runnerName: 'arc-canary-1a2b3c-runner-xyz12' });
    tally.jobCompleted(done('arc-runner-abcde', 'succeeded'));
    tally.jobCompleted(done('arc-runner-fghij', 'failed'));
    tally.jobCompleted(done('arc-runner-klmno', 'canceled'));
    tally.jobCompleted(done('arc-canary-1a2b3c-runner-xyz12', 'failed'));
    tally.jobCompleted(done('arc-canary-1a2b3c-runner-qrs34', 'succeeded'));
    expect(JSON.parse(tally.annotation() ?? '')).toEqual({
      set: 'arc-canary-1a2b3c',
      jobs: 2,
      failed: 1,
      baselineJobs: 2,
      baselineFailed: 1,
      firstFailure: 'job "build" of octo/app failed on runner arc-canary-1a2b3c-runner-xyz12',
    });
  });

  it('starts a new window for a later canary set', () => {
    const tally = new CanaryTally('arc');
    tally.jobCompleted(done('arc-canary-1a2b3c-runner-xyz12', 'failed'));
    tally.jobCompleted(done('arc-canary-4d5e6f-runner-xyz12', 'succeeded'));
    expect(JSON.parse(tally.annotation() ?? '')).toMatchObject({
      set: 'arc-canary-4d5e6f',
      jobs: 1,
      failed: 0,
    });
  });
});
