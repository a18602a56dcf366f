import {
  TIME_SCALE_ENV,
  scaled,
  timeScale,
  timeScaleForLoad,
  useTimeScaleForLoad,
} from '../../harness/time-scale';

describe('the time scale', () => {
  const before = process.env[TIME_SCALE_ENV];
  afterEach(() => {
    if (before === undefined) delete process.env[TIME_SCALE_ENV];
    else process.env[TIME_SCALE_ENV] = before;
  });

  it('is 1 up to one runnable process per core, then grows with the load per core, at most 4', () => {
    expect(timeScaleForLoad(0.5, 2)).toBe(1);
    expect(timeScaleForLoad(2, 2)).toBe(1);
    expect(timeScaleForLoad(8, 2)).toBe(2.5);
    expect(timeScaleForLoad(12, 2)).toBe(3.5);
    expect(timeScaleForLoad(40, 2)).toBe(4);
  });

  it('multiplies every bound by ARO_TEST_TIME_SCALE, 1 when unset', () => {
    delete process.env[TIME_SCALE_ENV];
    expect(scaled(30_000)).toBe(30_000);
    process.env[TIME_SCALE_ENV] = '2.5';
    expect(timeScale()).toBe(2.5);
    expect(scaled(30_000)).toBe(75_000);
  });

  it("derives the scale again for each chaos run when the user set none, not the first run's value", () => {
    // What the first run of a series derived, as the chaos runner leaves it in its environment.
    process.env[TIME_SCALE_ENV] = '3.7';
    expect(useTimeScaleForLoad(null)).toMatch(/derived from the load average/);
    expect(process.env[TIME_SCALE_ENV]).toBe(String(timeScaleForLoad()));
    // A scale the user gave stays.
    expect(useTimeScaleForLoad('2')).toMatch(/\(set\)/);
  });

  it('refuses a value that is not a number of at least 1, naming the variable', () => {
    for (const bad of ['0.5', 'fast', '-1']) {
      process.env[TIME_SCALE_ENV] = bad;
      expect(() => timeScale()).toThrow(/ARO_TEST_TIME_SCALE=".*": expected a number >= 1/);
    }
  });
});
