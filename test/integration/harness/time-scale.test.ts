import {
  TIME_SCALE_DERIVED_ENV,
  TIME_SCALE_ENV,
  scaled,
  timeScale,
  timeScaleForLoad,
  useTimeScaleForLoad,
} from '../../harness/time-scale';

describe('the time scale', () => {
  const before = { scale: process.env[TIME_SCALE_ENV], derived: process.env[TIME_SCALE_DERIVED_ENV] };
  afterEach(() => {
    if (before.scale === undefined) delete process.env[TIME_SCALE_ENV];
    else process.env[TIME_SCALE_ENV] = before.scale;
    if (before.derived === undefined) delete process.env[TIME_SCALE_DERIVED_ENV];
    else process.env[TIME_SCALE_DERIVED_ENV] = before.derived;
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
    delete process.env[TIME_SCALE_DERIVED_ENV];
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

  it('follows the load up, never down, when derived; stays as given when set', () => {
    // Derived at the run's start from a low load (the hog and the install had not raised it yet).
    process.env[TIME_SCALE_ENV] = '1.9';
    process.env[TIME_SCALE_DERIVED_ENV] = '1';
    expect(timeScale(12, 2)).toBe(3.5);
    expect(timeScale(2, 2)).toBe(1.9);
    // A worker's setup meeting the run's derived value keeps it derived.
    useTimeScaleForLoad();
    expect(process.env[TIME_SCALE_DERIVED_ENV]).toBe('1');
    expect(timeScale(40, 2)).toBe(4);
    // A value the user gave is the scale, whatever the load.
    useTimeScaleForLoad('1.9');
    expect(timeScale(12, 2)).toBe(1.9);
  });

  it('refuses a value that is not a number of at least 1, naming the variable', () => {
    for (const bad of ['0.5', 'fast', '-1']) {
      process.env[TIME_SCALE_ENV] = bad;
      expect(() => timeScale()).toThrow(/ARO_TEST_TIME_SCALE=".*": expected a number >= 1/);
    }
  });
});
