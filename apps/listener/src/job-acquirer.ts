import type { JobAvailable, RunnerScaleSetStatistic } from '@aro/actions/lean';
import type { Logger } from '@aro/observability/lean';

/** The acquire call with the session's queue token; the loop supplies it (it owns token refresh). */
export type AcquireCall = (requestIds: number[]) => Promise<number[]>;

export interface JobAcquirerOptions {
  maxRunners: number;
  logger: Logger;
  /** Acquire attempts for a job whose acquire call failed, before it is left to the service to re-offer. */
  maxAttempts?: number;
  onAcquired?: (count: number) => void;
  onNotAcquired?: (reason: 'capacity' | 'taken' | 'failed', count: number) => void;
}

/**
 * How many of the offered jobs the scale set can take now: maxRunners minus the jobs already assigned
 * to it (at least the busy runners). An acquired job that no runner can take would wait on GitHub for
 * a runner that never comes (upstream #3446 acquires even at maxRunners 0); a job left alone is offered
 * again by the service and may go to a scale set that has room.
 */
export function acquireCapacity(maxRunners: number, stats: RunnerScaleSetStatistic | undefined): number {
  const committed = Math.max(stats?.totalAssignedJobs ?? 0, stats?.totalBusyRunners ?? 0);
  return Math.max(0, maxRunners - committed);
}

/**
 * Acquires offered jobs within capacity, oldest request first. A failed acquire call (the service may
 * or may not have acted) keeps its jobs for the next cycle, where they are offered again with the then
 * current capacity; acquiring a job twice is harmless (the service returns only what it gave us now).
 */
export class JobAcquirer {
  private readonly retry = new Map<number, number>();
  private readonly maxAttempts: number;

  constructor(private readonly o: JobAcquirerOptions) {
    this.maxAttempts = o.maxAttempts ?? 3;
  }

  get pendingRetries(): number {
    return this.retry.size;
  }

  async acquire(
    offered: JobAvailable[],
    stats: RunnerScaleSetStatistic | undefined,
    call: AcquireCall,
  ): Promise<number[]> {
    const ids = [...new Set([...this.retry.keys(), ...offered.map((j) => j.runnerRequestId)])].sort(
      (a, b) => a - b,
    );
    if (ids.length === 0) return [];
    const capacity = acquireCapacity(this.o.maxRunners, stats);
    const take = ids.slice(0, capacity);
    const left = ids.length - take.length;
    if (left > 0) {
      for (const id of ids.slice(capacity)) this.retry.delete(id);
      this.o.onNotAcquired?.('capacity', left);
      this.o.logger.info('Not acquiring jobs beyond maxRunners; the service offers them again later', {
        offered: ids.length,
        capacity,
        maxRunners: this.o.maxRunners,
        assignedJobs: stats?.totalAssignedJobs,
        busyRunners: stats?.totalBusyRunners,
      });
    }
    if (take.length === 0) return [];
    let acquired: number[];
    try {
      acquired = await call(take);
    } catch (err) {
      for (const id of take) {
        const attempts = (this.retry.get(id) ?? 0) + 1;
        if (attempts < this.maxAttempts) this.retry.set(id, attempts);
        else this.retry.delete(id);
      }
      this.o.onNotAcquired?.('failed', take.length);
      throw err;
    }
    for (const id of take) this.retry.delete(id);
    this.o.onAcquired?.(acquired.length);
    if (acquired.length < take.length) this.o.onNotAcquired?.('taken', take.length - acquired.length);
    this.o.logger.info('Acquired jobs', { requested: take.length, acquired: acquired.length, capacity });
    return acquired;
  }
}
