import { WarmHeadroom } from './headroom';

const MIN = 60_000;

describe('WarmHeadroom', () => {
  it('keeps ceil(arrival rate x start time) runners: 6 jobs a minute, runners starting in 20 s, is 2', () => {
    const h = new WarmHeadroom({ maxRunners: 10, windowMs: MIN });
    h.jobStarted(20_000);
    for (let i = 0; i < 6; i++) h.jobArrived(i * 5_000);
    expect(h.ratePerSecond(30_000)).toBeCloseTo(0.1);
    expect(h.startTimeMs()).toBe(20_000);
    expect(h.runners(30_000)).toBe(2);
    // One more arrival: 7 x 20 / 60 = 2.33, rounded up.
    h.jobArrived(31_000);
    expect(h.runners(31_000)).toBe(3);
  });

  it('is never more than its cap', () => {
    const h = new WarmHeadroom({ maxRunners: 3, windowMs: MIN });
    h.jobStarted(60_000);
    for (let i = 0; i < 50; i++) h.jobArrived(1_000);
    expect(h.runners(2_000)).toBe(3);
  });

  it('falls to 0 once no job arrived within the window', () => {
    const h = new WarmHeadroom({ maxRunners: 10, windowMs: MIN });
    h.jobStarted(30_000);
    for (let i = 0; i < 4; i++) h.jobArrived(10_000);
    expect(h.runners(20_000)).toBe(2);
    expect(h.runners(10_000 + MIN - 1)).toBe(2);
    expect(h.runners(10_000 + MIN)).toBe(0);
    expect(h.ratePerSecond(10_000 + MIN)).toBe(0);
  });

  it('sizes with cold starts only: warm starts (under a second) leave the start time as it was', () => {
    const h = new WarmHeadroom({ maxRunners: 10, windowMs: MIN });
    h.jobArrived(0);
    expect(h.runners(1_000)).toBe(0); // no start measured yet: nothing to size it with
    for (const ms of [200, 0, 999]) h.jobStarted(ms);
    expect(h.startTimeMs()).toBeUndefined();
    h.jobStarted(12_000);
    h.jobStarted(18_000);
    h.jobStarted(15_000);
    for (let i = 0; i < 20; i++) h.jobStarted(300);
    // The median of the cold starts: one job stuck behind maxRunners does not set it either.
    h.jobStarted(600_000);
    expect(h.startTimeMs()).toBe(16_500);
  });

  it('is off at maxRunners 0: no arrivals kept, no runners', () => {
    const h = new WarmHeadroom({ maxRunners: 0, windowMs: MIN });
    h.jobStarted(20_000);
    for (let i = 0; i < 10; i++) h.jobArrived(0);
    expect(h.runners(1_000)).toBe(0);
    expect(h.ratePerSecond(1_000)).toBe(0);
  });
});
