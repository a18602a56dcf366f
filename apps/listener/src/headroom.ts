/** What config.json's `warm_headroom` asks for (ARO; absent: no headroom). */
export interface WarmHeadroomSettings {
  /** The most idle runners the headroom adds above minRunners; 0 turns it off. */
  maxRunners: number;
  /** How far back job arrivals count toward the rate; no arrival for this long brings the headroom to 0. */
  windowMs: number;
}

/**
 * A job that had a runner within this long of reaching the scale set found one idle: its wait says
 * nothing of how long a runner takes to start, so it is not a start-time sample (counted, a fleet whose
 * headroom works would learn that runners start at once and drop the headroom that made them).
 */
export const WARM_START_MS = 1_000;
/** Cold starts kept; the start time is their median, so one job stuck behind maxRunners does not set it. */
const START_SAMPLES = 16;
/**
 * Arrivals kept at most. Past it the oldest go, which can only understate the rate; at that many jobs a
 * window, any start time of a second or more already asks for more than a sane cap.
 */
const MAX_ARRIVALS = 10_000;

/**
 * Warm headroom: idle runners kept above minRunners so that the first jobs of a burst start on runners
 * that are already up, instead of waiting a runner's start time for each.
 *
 *   headroom = min(maxRunners, ceil(arrival rate over the window × runner start time))
 *
 * The arrival rate counts the jobs assigned to the scale set within the last `windowMs`; the start time
 * is the median of the recent cold starts (the time from a job's assignment to the scale set to its
 * runner, for jobs that waited at least {@link WARM_START_MS}). No start measured yet, or no arrival within
 * the window, is no headroom: the set is back at minRunners once the jobs stop.
 */
export class WarmHeadroom {
  /** Arrival times (ms), oldest first. */
  private readonly arrivals: number[] = [];
  /** The latest cold start times (ms), oldest first. */
  private readonly starts: number[] = [];

  constructor(readonly settings: WarmHeadroomSettings) {}

  /** A job reached the scale set (JobAssigned) at `atMs`. */
  jobArrived(atMs: number): void {
    if (this.settings.maxRunners <= 0) return;
    this.arrivals.push(atMs);
    if (this.arrivals.length > MAX_ARRIVALS) this.arrivals.splice(0, this.arrivals.length - MAX_ARRIVALS);
  }

  /** A job got its runner `waitMs` after it reached the scale set. */
  jobStarted(waitMs: number): void {
    if (this.settings.maxRunners <= 0 || !Number.isFinite(waitMs) || waitMs < WARM_START_MS) return;
    this.starts.push(waitMs);
    if (this.starts.length > START_SAMPLES) this.starts.shift();
  }

  /** The runner start time now taken (the median of the cold starts kept), or undefined before one. */
  startTimeMs(): number | undefined {
    if (this.starts.length === 0) return undefined;
    const sorted = [...this.starts].sort((a, b) => a - b);
    const mid = sorted.length >> 1;
    return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  }

  /** Jobs a second over the window ending at `nowMs`. */
  ratePerSecond(nowMs: number): number {
    this.forget(nowMs);
    return this.arrivals.length / (this.settings.windowMs / 1000);
  }

  /** The idle runners to keep above minRunners at `nowMs` (before the maxRunners bound, which the scaler applies). */
  runners(nowMs: number): number {
    const { maxRunners } = this.settings;
    if (maxRunners <= 0) return 0;
    const rate = this.ratePerSecond(nowMs);
    const start = this.startTimeMs();
    if (rate === 0 || start === undefined) return 0;
    // The jobs expected to arrive while one runner starts, rounded up: a fraction of a job is still a
    // job that waits. The epsilon keeps 3 jobs/min × 20 s from rounding up to 2 by float error.
    const expected = rate * (start / 1000);
    return Math.min(maxRunners, Math.ceil(expected - 1e-9));
  }

  private forget(nowMs: number): void {
    const from = nowMs - this.settings.windowMs;
    let drop = 0;
    while (drop < this.arrivals.length && this.arrivals[drop] <= from) drop++;
    if (drop > 0) this.arrivals.splice(0, drop);
  }
}
