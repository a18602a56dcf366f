import type { JobCompleted, JobMessageBase, JobStarted, RunnerScaleSetStatistic } from '@aro/actions/lean';
import type { GhaMetrics } from './gha-metrics';
import type { JobBookkeeping } from './job-bookkeeping';
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

/**
 * The port as ARO implements it: the Scaler's merge patch on the EphemeralRunnerSet, the bookkeeping
 * worker for the runners' status, upstream's gha_* metrics and ARO's count of scale patches.
 */
export class EphemeralRunnerSetScaling implements ScalingPort {
  constructor(
    private readonly o: {
      scaler: Scaler;
      bookkeeping: JobBookkeeping;
      gha: GhaMetrics;
      metrics: ListenerMetrics;
    },
  ) {}

  jobsChanged(
    started: readonly JobStarted[],
    completed: readonly JobCompleted[],
    assigned: readonly JobMessageBase[] = [],
  ): void {
    // Assigned first: a message may carry a job's assignment and its start together.
    for (const job of assigned) this.o.gha.recordJobAssigned(job);
    for (const job of started) {
      this.o.gha.recordJobStarted(job);
      this.o.scaler.markJobEvent();
      this.o.bookkeeping.record(job);
    }
    for (const job of completed) {
      this.o.gha.recordJobCompleted(job);
      this.o.scaler.markJobEvent(job.runnerName);
    }
  }

  scale(statistics: RunnerScaleSetStatistic | undefined): Promise<void> {
    if (statistics) this.o.gha.recordStatistics(statistics);
    const assigned = statistics?.totalAssignedJobs ?? 0;
    return this.counted(() => this.o.scaler.setDesired(assigned));
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
