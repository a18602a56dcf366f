import type { JobCompleted, JobMessageBase, JobStarted, RunnerScaleSetStatistic } from '@aro/actions/lean';
import type { Clock } from '@aro/kube/lean';
import type { GhaMetrics } from './gha-metrics';
import type { WarmHeadroom } from './headroom';
import type { JobBookkeeping } from './job-bookkeeping';
import type { CanaryTally } from './canary-tally';
import type { ListenerMetrics } from './listener-metrics';
import type { Scaler } from './scaler';

/**
 * What the poll loop asks of the scale set's side, and all it knows of it (upstream's listener calls a
 * scaler interface of the same shape): the loop speaks the Actions protocol; where the jobs land (the
 * EphemeralRunnerSet, the runners' status, the gha_* metrics) is behind this port.
 */
export interface ScalingPort {
  /** What one message reported; recorded at once, never waiting on Kubernetes. */
  jobsChanged(
    started: readonly JobStarted[],
    completed: readonly JobCompleted[],
    assigned?: readonly JobMessageBase[],
  ): void;
  /**
   * The service's latest statistics (a message, an idle poll, a new session): writes the desired count
   * for them. A failed write rejects and is kept: `flush` (or the next call) sends it again.
   */
  scale(statistics: RunnerScaleSetStatistic | undefined): Promise<void>;
  /** Sends a desired count whose write failed earlier; resolves at once when there is none. */
  flush(): Promise<void>;
}

/** Milliseconds of a job message's time field, or undefined when unset (Go's zero time) or unreadable. */
function messageTimeMs(value: string | undefined): number | undefined {
  const ms = value ? Date.parse(value) : NaN;
  return Number.isNaN(ms) || ms <= 0 ? undefined : ms;
}

/**
 * The port as ARO implements it: the Scaler's merge patch on the EphemeralRunnerSet, the bookkeeping
 * worker for the runners' status, upstream's gha_* metrics and ARO's count of scale patches; with the
 * warm headroom (opt-in) fed from the same messages, and the idle runner-seconds it costs counted.
 */
export class EphemeralRunnerSetScaling implements ScalingPort {
  /** The idle runners the service last reported, and since when (for the idle runner-seconds). */
  private idleSince: { runners: number; atMs: number } | undefined;

  constructor(
    private readonly o: {
      scaler: Scaler;
      bookkeeping: JobBookkeeping;
      gha: GhaMetrics;
      metrics: ListenerMetrics;
      clock: Clock;
      /** The warm headroom; without it the count is upstream's. */
      headroom?: WarmHeadroom;
      /** Canary job results (canary-tally.ts), written by the scaler with each patch. */
      canary?: CanaryTally;
    },
  ) {}

  jobsChanged(
    started: readonly JobStarted[],
    completed: readonly JobCompleted[],
    assigned: readonly JobMessageBase[] = [],
  ): void {
    // Assigned first: a message may carry a job's assignment and its start together.
    const now = this.o.clock.now();
    for (const job of assigned) {
      this.o.gha.recordJobAssigned(job);
      this.o.headroom?.jobArrived(now);
    }
    for (const job of started) {
      this.o.gha.recordJobStarted(job);
      this.recordStartTime(job);
      this.o.scaler.markJobEvent();
      this.o.bookkeeping.record(job);
      this.o.canary?.jobStarted(job);
    }
    for (const job of completed) {
      this.o.gha.recordJobCompleted(job);
      this.o.scaler.markJobEvent(job.runnerName);
      this.o.canary?.jobCompleted(job);
    }
  }

  scale(statistics: RunnerScaleSetStatistic | undefined): Promise<void> {
    if (statistics) this.o.gha.recordStatistics(statistics);
    this.countIdle(statistics);
    const assigned = statistics?.totalAssignedJobs ?? 0;
    const headroom = this.o.headroom?.runners(this.o.clock.now()) ?? 0;
    this.o.metrics.headroom(headroom, this.o.headroom?.startTimeMs());
    return this.counted(() => this.o.scaler.setDesired(assigned, headroom));
  }

  /**
   * The time from the job reaching the scale set to its runner: a cold one is how long a runner takes
   * to start, which sizes the headroom.
   */
  private recordStartTime(job: JobStarted): void {
    if (!this.o.headroom) return;
    const assignedAt = messageTimeMs(job.scaleSetAssignTime);
    const startedAt = messageTimeMs(job.runnerAssignTime);
    if (assignedAt !== undefined && startedAt !== undefined)
      this.o.headroom.jobStarted(startedAt - assignedAt);
  }

  /**
   * Idle runner-seconds: the service's count of idle runners held since its previous report (each
   * decision has the latest statistics, at least every long poll). What warm headroom costs, and what
   * minRunners costs without it.
   */
  private countIdle(statistics: RunnerScaleSetStatistic | undefined): void {
    const now = this.o.clock.now();
    if (this.idleSince && this.idleSince.runners > 0 && now > this.idleSince.atMs) {
      this.o.metrics.idleRunnerSeconds((this.idleSince.runners * (now - this.idleSince.atMs)) / 1000);
    }
    if (statistics) this.idleSince = { runners: Math.max(0, statistics.totalIdleRunners), atMs: now };
    else if (this.idleSince) this.idleSince.atMs = now;
  }

  flush(): Promise<void> {
    if (!this.o.scaler.hasPending) return Promise.resolve();
    return this.counted(() => this.o.scaler.flushPending());
  }

  private async counted(write: () => Promise<unknown>): Promise<void> {
    try {
      await write();
      this.o.metrics.scalePatch('success');
    } catch (err) {
      this.o.metrics.scalePatch('error');
      throw err;
    }
  }
}
