import { ExponentialBackoffRateLimiter, exponentialBackoffMs } from './rate-limiter';

describe('exponential backoff', () => {
  it('waits base, then doubles per attempt up to the cap, and never yields NaN', () => {
    expect([0, 1, 2, 3, 4].map((n) => exponentialBackoffMs(n, 5_000, 30_000))).toEqual([
      0, 5_000, 10_000, 20_000, 30_000,
    ]);
    expect(exponentialBackoffMs(5_000, 0, 10)).toBe(0);
    expect(exponentialBackoffMs(5_000, 1, 10)).toBe(10);
  });

  it('is the per-key curve of the rate limiter, reset by forget', () => {
    const limiter = new ExponentialBackoffRateLimiter(5, 40);
    expect([1, 2, 3, 4, 5].map(() => limiter.when('k'))).toEqual([5, 10, 20, 40, 40]);
    expect(limiter.numRequeues('k')).toBe(5);
    expect(limiter.when('other')).toBe(5);
    limiter.forget('k');
    expect(limiter.when('k')).toBe(5);
  });
});
