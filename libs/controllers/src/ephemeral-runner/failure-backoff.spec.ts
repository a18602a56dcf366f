import { failureBackoffMs } from './failure-backoff';

describe('failureBackoffMs', () => {
  it('gives the schedule of upstream ARC, 0, 5, 10, 20, 40, 80 seconds, for zero to five failures', () => {
    expect([0, 1, 2, 3, 4, 5].map((n) => failureBackoffMs(n))).toEqual([
      0, 5_000, 10_000, 20_000, 40_000, 80_000,
    ]);
  });

  it('keeps doubling past 80 seconds when the failure limit is raised', () => {
    expect(failureBackoffMs(6)).toBe(160_000);
    expect(failureBackoffMs(7)).toBe(320_000);
  });

  it('scales the whole schedule from its base', () => {
    expect([0, 1, 2, 3].map((n) => failureBackoffMs(n, 20))).toEqual([0, 20, 40, 80]);
  });

  it('never exceeds a day, so a huge limit cannot overflow a timer', () => {
    expect(failureBackoffMs(60)).toBe(24 * 60 * 60 * 1000);
  });
});
