import { cpus, loadavg } from 'node:os';

/**
 * The one time scale of the test harness: every bound on a wait (waitFor's timeouts, jest's per-test
 * timeouts, the players' status writes) is the quiet-machine bound times this factor.
 *
 * A bound is what the product promises (a lease duration, a retry period, a grace) plus the time the
 * machine needs to do the work in between; only the second part grows with load, and it grows with
 * it for everything at once. So one factor, set once per run, rather than a larger number in each
 * test: a wait that passes on a quiet machine at scale 1 passes on a loaded one at the scale its load
 * calls for, and a real failure still fails (later, never hidden: nothing is retried).
 *
 * `ARO_TEST_TIME_SCALE` sets it (a number >= 1). Unset, jest's global setup derives it from the load
 * average per core when the run starts (see {@link timeScaleForLoad}) and puts it in the environment,
 * so every worker and child process of the run starts from the same value. A derived scale (not one a
 * user set) then follows the load up, never down: each bound taken later in the run is at least what
 * the load at that moment calls for. A run's load is rarely flat: the first loaded run of 2026-12-03
 * derived x1.9 from load 5.6 as it began (the CPU hog and the install had not yet raised the 1-minute
 * average), then ran at a median load of 11.5 and up to 22, where a unit spec's 9.5 s bound on two RSA
 * keys ran out; load 11.5 calls for x3.4.
 */
export const TIME_SCALE_ENV = 'ARO_TEST_TIME_SCALE';
/** Set to `1` beside {@link TIME_SCALE_ENV} when the scale was derived from the load, not given. */
export const TIME_SCALE_DERIVED_ENV = 'ARO_TEST_TIME_SCALE_DERIVED';

/** The largest scale derived from load: beyond it a wait that has not ended is a failure, not a slow machine. */
export const MAX_DERIVED_TIME_SCALE = 4;

/**
 * The scale now: ARO_TEST_TIME_SCALE, 1 when unset; when it was derived from the load, the larger of it
 * and what the load average now calls for (`load1`, `cores`: the machine's, given by tests). A value
 * below 1 or not a number is refused.
 */
export function timeScale(load1: number = loadavg()[0], cores: number = cpus().length): number {
  const raw = process.env[TIME_SCALE_ENV];
  if (raw === undefined || raw === '') return 1;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 1) {
    throw new Error(
      `${TIME_SCALE_ENV}=${JSON.stringify(raw)}: expected a number >= 1 (1 on a quiet machine)`,
    );
  }
  if (process.env[TIME_SCALE_DERIVED_ENV] !== '1') return value;
  return Math.max(value, timeScaleForLoad(load1, cores));
}

/** `ms` (a bound measured on a quiet machine) at this run's time scale. */
export function scaled(ms: number): number {
  return Math.round(ms * timeScale());
}

/**
 * The scale a load average calls for: 1 up to one runnable process per core, then growing with the
 * load per core (at load 8 on 2 cores, 2.5), at most {@link MAX_DERIVED_TIME_SCALE}. Rounded to a
 * tenth, so that the value printed is the value used.
 */
export function timeScaleForLoad(load1: number = loadavg()[0], cores: number = cpus().length): number {
  const perCore = load1 / Math.max(1, cores);
  const scale = 1 + Math.max(0, perCore - 1) / 2;
  return Math.min(MAX_DERIVED_TIME_SCALE, Math.round(scale * 10) / 10);
}

/**
 * Sets this process's time scale from the load average now, unless ARO_TEST_TIME_SCALE was given, and
 * says which it is. Jest's global setup does it once per run; the chaos runner once per seeded run (the
 * load moves over a series of hours) and the sandbox at its start, since neither goes through jest: at
 * scale 1 on a machine at load 40, a 10 s bound on one pod-status write ended chaos seed 112 with a
 * runner pod nobody finished.
 */
export function useTimeScaleForLoad(given?: string | null): string {
  const env = process.env[TIME_SCALE_ENV];
  // No argument: what this process inherited. A value this run's global setup derived (a worker's setup
  // meets it again) stays derived; a value the user put in the environment stays given.
  const inherited = given === undefined && !!env && process.env[TIME_SCALE_DERIVED_ENV] === '1';
  const value = given === undefined ? env : given;
  const derive = !inherited && (value === undefined || value === null || value === '');
  if (derive) {
    process.env[TIME_SCALE_ENV] = String(timeScaleForLoad());
    process.env[TIME_SCALE_DERIVED_ENV] = '1';
  } else if (!inherited) {
    process.env[TIME_SCALE_ENV] = value ?? '';
    delete process.env[TIME_SCALE_DERIVED_ENV];
  }
  const derived = derive || inherited;
  const scale = timeScale();
  return derived
    ? `${TIME_SCALE_ENV}=${scale} (derived from the load average ${loadavg()[0].toFixed(1)} on ${cpus().length} cores; raised with the load during the run): every wait bound is at least x${scale}`
    : `${TIME_SCALE_ENV}=${scale} (set): every wait bound is x${scale}`;
}
