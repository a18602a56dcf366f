import type { JobView } from '../../../apps/simulator/src';
import { busyPodsKept, jobsOnce, maxRunnersHeld } from '../../chaos/invariants';
import { CLASSIC_KINDS, FAULT_KINDS, RESTART_KINDS, describeFault, planFaults } from '../../chaos/schedule';

// The chaos runner's pure parts: the seeded schedule and the invariants' judgement. (In the integration
// project, as the sandbox's, because the unit project's roots are apps/ and libs/.)
describe('the chaos schedule', () => {
  it('draws the same faults at the same moments from the same seed, and others from another', () => {
    const options = { minFaults: 3, maxFaults: 6 };
    expect(planFaults(42, options)).toEqual(planFaults(42, options));
    expect(planFaults(42, options).map(describeFault)).not.toEqual(
      planFaults(43, options).map(describeFault),
    );
  });

  it('keeps within its bounds and reaches every kind', () => {
    const seen = new Set<string>();
    for (let seed = 0; seed < 200; seed++) {
      const faults = planFaults(seed, { minFaults: 3, maxFaults: 6 });
      expect(faults.length).toBeGreaterThanOrEqual(3);
      expect(faults.length).toBeLessThanOrEqual(6);
      for (const f of faults) {
        seen.add(f.kind);
        expect(f.atShareDone).toBeGreaterThanOrEqual(0.05);
        expect(f.atShareDone).toBeLessThanOrEqual(0.85);
      }
      expect(faults.map((f) => f.atShareDone)).toEqual(
        [...faults.map((f) => f.atShareDone)].sort((a, b) => a - b),
      );
    }
    expect([...seen].sort()).toEqual([...FAULT_KINDS].sort());
  });

  it('draws with the classic kinds exactly what seeds drew before the restarts existed', () => {
    // The published runs (docs/reliability.md) and the short seeds of this suite, as drawn then.
    const series = { minFaults: 3, maxFaults: 6, kinds: CLASSIC_KINDS };
    const drawn = (seed: number, options = series): string =>
      planFaults(seed, options).map(describeFault).join(' ');
    expect(drawn(100)).toBe('reset@6%/13s freeze-apiserver@48%/9s throttled@56%/8s');
    expect(drawn(104)).toBe(
      'edit-template@35% throttled@49%/19s kill-leader@58% edit-template@64% kill-leader@74% kill-leader@82%',
    );
    expect(drawn(107)).toBe(
      'freeze-apiserver@9%/7s throttled@9%/9s delete-scale-set@16% freeze-apiserver@18%/9s reset@20%/10s freeze-apiserver@61%/7s',
    );
    expect(drawn(13, { ...series, minFaults: 3, maxFaults: 3 })).toBe(
      'freeze-apiserver@11%/3s kill-leader@12% delete-scale-set@57%',
    );
    expect(drawn(17, { ...series, minFaults: 2, maxFaults: 3 })).toBe(
      'delete-runner-pod@28% kill-listener@48% reset@69%/10s',
    );
  });

  it('gives a restart a downtime of 2 to 8 s and draws its signal', () => {
    const restarts = Array.from({ length: 300 }, (_, seed) =>
      planFaults(seed, { minFaults: 3, maxFaults: 6 }),
    )
      .flat()
      .filter((f) => RESTART_KINDS.includes(f.kind));
    expect(restarts.length).toBeGreaterThan(100);
    for (const f of restarts) {
      expect(f.seconds).toBeGreaterThanOrEqual(2);
      expect(f.seconds).toBeLessThanOrEqual(8);
    }
    // Both ways of ending the process come up: a crash (pick < 0.5, SIGKILL) and a graceful stop.
    expect(restarts.some((f) => f.pick < 0.5) && restarts.some((f) => f.pick >= 0.5)).toBe(true);
  });
});

describe('the chaos invariants', () => {
  const job = (id: string, over: Partial<JobView> = {}): JobView =>
    ({
      jobId: id,
      state: 'completed',
      result: 'succeeded',
      startAttempts: 1,
      runnerName: `runner-${id}`,
      ...over,
    }) as JobView;

  it('holds a run where every job succeeded once on its own runner', () => {
    expect(jobsOnce([job('a'), job('b')], new Set())).toEqual([]);
  });

  it('names a job started twice, one failed, one unfinished, and a runner with two jobs', () => {
    const found = jobsOnce(
      [
        job('again', { startAttempts: 2 }),
        job('failed', { result: 'failed' }),
        job('open', { state: 'running' }),
        job('x', { runnerName: 'shared' }),
        job('y', { runnerName: 'shared' }),
      ],
      new Set(),
    ).map((v) => v.detail);
    expect(found.join('\n')).toMatch(/1 jobs not completed \(open/);
    expect(found.join('\n')).toMatch(/1 jobs ended failed \(failed on runner-failed\)/);
    expect(found.join('\n')).toMatch(/1 jobs started other than once \(again x2\)/);
    expect(found.join('\n')).toMatch(/shared ran 2/);
  });

  it('excuses only the jobs a fault broke on purpose', () => {
    expect(jobsOnce([job('killed', { result: 'failed' })], new Set(['killed']))).toEqual([]);
    const deleted = new Map([
      ['pod-a', 'killed'],
      ['pod-b', 'innocent'],
    ]);
    expect(busyPodsKept(deleted, new Set(['killed']))).toEqual([
      { invariant: 'busy-pod-kept', detail: '1 runner pods deleted during their job: pod-b (job innocent)' },
    ]);
  });

  it('counts a peak above maxRunners, of runners or of pods', () => {
    expect(maxRunnersHeld({ runners: 5, pods: 5, samples: 100 }, 5)).toEqual([]);
    expect(maxRunnersHeld({ runners: 6, pods: 5, samples: 100 }, 5)[0].detail).toBe(
      '6 live EphemeralRunners at once, maxRunners 5 (100 samples)',
    );
  });
});
