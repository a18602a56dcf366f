import { SLOW_RETRY_BASE_MS, SLOW_RETRY_MAX_MS, SlowRetries, slowRetryMs } from './slow-retry';

describe('slowRetryMs', () => {
  it.each([
    [1, 5_000],
    [2, 10_000],
    [3, 20_000],
    [4, 40_000],
    [5, 80_000],
    [6, 160_000],
    [7, 300_000],
    [8, 300_000],
    [1_000, 300_000],
  ])('waits %i failures for %i ms', (failures, ms) => {
    expect(slowRetryMs(failures)).toBe(ms);
  });

  it('treats zero or a negative count as the first failure', () => {
    expect(slowRetryMs(0)).toBe(SLOW_RETRY_BASE_MS);
    expect(slowRetryMs(-3)).toBe(SLOW_RETRY_BASE_MS);
  });
});

describe('SlowRetries', () => {
  it('doubles per runner from 5 s to 5 min, independently for each runner, and starts again after a reset', () => {
    const retries = new SlowRetries();
    const a = [1, 2, 3, 4, 5, 6, 7, 8].map(() => retries.next('ns/a'));
    expect(a).toEqual([5_000, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000, SLOW_RETRY_MAX_MS]);
    expect(retries.next('ns/b')).toBe(5_000);
    retries.reset('ns/a');
    expect(retries.next('ns/a')).toBe(5_000);
  });
});
