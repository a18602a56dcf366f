import type { EphemeralRunner, EphemeralRunnerSet } from '@aro/api';
import { mirroredRunnersHealthy } from '../shared/runners-healthy';
import { RunnerFailureCondition } from './runner-failure-condition';
import { type RunnersByState, runnersByState } from './runner-states';

const failed = (uid: string, reason: string): EphemeralRunner =>
  ({
    metadata: { name: `r-${uid}`, uid },
    spec: {},
    status: { phase: 'Failed', reason, message: `${reason} for ${uid}` },
  }) as unknown as EphemeralRunner;
const ready = (uid: string): EphemeralRunner =>
  ({
    metadata: { name: `r-${uid}`, uid },
    spec: {},
    status: { phase: 'Pending', ready: true },
  }) as unknown as EphemeralRunner;
const set = (conditions?: EphemeralRunnerSet['status'] extends infer S ? S : never): EphemeralRunnerSet =>
  ({ metadata: { name: 's' }, spec: {}, status: conditions }) as unknown as EphemeralRunnerSet;

const passOf = (obj: EphemeralRunnerSet, key: string, states: RunnersByState) => ({ obj, key, states });

describe('RunnerFailureCondition', () => {
  it('counts each failed runner once, per reason, and clears when a runner comes up', () => {
    const tracker = new RunnerFailureCondition();
    const first = tracker.observe(passOf(set(), 'ns/s', runnersByState([failed('a', 'ImagePullBackOff')])));
    expect(first).toMatchObject({ status: 'False', reason: 'ImagePullBackOff' });
    expect(first?.message).toMatch(/^1 runner failed with ImagePullBackOff/);
    // Seen again while it is still listed: nothing new.
    expect(
      tracker.observe(passOf(set(), 'ns/s', runnersByState([failed('a', 'ImagePullBackOff')]))),
    ).toBeUndefined();
    const second = tracker.observe(passOf(set(), 'ns/s', runnersByState([failed('b', 'ImagePullBackOff')])));
    expect(second?.message).toMatch(/^2 runners failed with ImagePullBackOff.*r-b: ImagePullBackOff for b/);
    const cleared = tracker.observe(
      passOf(
        set({ conditions: [{ ...second!, type: 'RunnersHealthy' }] } as never),
        'ns/s',
        runnersByState([ready('c')]),
      ),
    );
    expect(cleared).toMatchObject({ status: 'True', reason: 'RunnerReady' });
  });

  it('carries the count on from the condition after a restart', () => {
    const existing = set({
      conditions: [
        {
          type: 'RunnersHealthy',
          status: 'False',
          reason: 'InvalidImageName',
          message: '4 runners failed with InvalidImageName ...',
        },
      ],
    } as never);
    const next = new RunnerFailureCondition().observe(
      passOf(existing, 'ns/s', runnersByState([failed('z', 'InvalidImageName')])),
    );
    expect(next?.message).toMatch(/^5 runners failed/);
  });
});

describe('mirroredRunnersHealthy', () => {
  it('copies the runner set condition onto the AutoscalingRunnerSet only when it differs', () => {
    const source = [
      {
        type: 'RunnersHealthy',
        status: 'False' as const,
        reason: 'Unschedulable',
        message: 'm',
        lastTransitionTime: 'x',
      },
    ];
    const copied = mirroredRunnersHealthy(undefined, source, new Date('2026-12-03T10:00:00Z'));
    expect(copied).toEqual([
      {
        type: 'RunnersHealthy',
        status: 'False',
        reason: 'Unschedulable',
        message: 'm',
        lastTransitionTime: '2026-12-03T10:00:00Z',
      },
    ]);
    expect(mirroredRunnersHealthy(copied, source, new Date())).toBeUndefined();
    expect(mirroredRunnersHealthy(copied, [], new Date())).toBeUndefined();
  });
});
