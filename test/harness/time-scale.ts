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
 * so every worker and child process of the run uses the same value.
 */
export const TIME_SCALE_ENV = 'ARO_TEST_TIME_SCALE';

/** The largest scale derived from load: beyond it a wait that has not ended is a failure, not a slow machine. */
export const MAX_DERIVED_TIME_SCALE = 4;

/** The scale of this run: ARO_TEST_TIME_SCALE, 1 when unset. A value below 1 or not a number is refused. */
export function timeScale(): number {
  const raw = process.env[TIME_SCALE_ENV];
  if (raw === undefined || raw === '') return 1;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 1) {
    throw new Error(
      `${TIME_SCALE_ENV}=${JSON.stringify(raw)}: expected a number >= 1 (1 on a quiet machine)`,
    );
  }
  return value;
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
export function useTimeScaleForLoad(given: string | undefined | null = process.env[TIME_SCALE_ENV]): string {
  const derived = given === undefined || given === null || given === '';
  if (derived) process.env[TIME_SCALE_ENV] = String(timeScaleForLoad());
  const scale = timeScale();
  return `${TIME_SCALE_ENV}=${scale} (${derived ? `derived from the load average ${loadavg()[0].toFixed(1)} on ${cpus().length} cores` : 'set'}): every wait bound is x${scale}`;
}
