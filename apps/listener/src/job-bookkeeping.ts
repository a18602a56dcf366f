import { EphemeralRunnerKind, type EphemeralRunnerStatus } from '@aro/api/lean';
import type { JobStarted } from '@aro/actions/lean';
import { Clock, TokenBucketRateLimiter, isNotFound, sleep, systemClock } from '@aro/kube/lean';
import type { Logger } from '@aro/observability/lean';
import type { PatchClient } from './scaler';

export interface JobBookkeepingOptions {
  /** Namespace of the EphemeralRunnerSet, where its runners live. */
  namespace: string;
  logger: Logger;
  /** Status patches per second, and the burst allowed above it. */
  qps?: number;
  burst?: number;
  /** Attempts per runner before a status patch is given up (it only informs; the job runs anyway). */
  maxAttempts?: number;
  clock?: Clock;
  onQueueDepth?: (depth: number) => void;
  onPatched?: (result: 'patched' | 'not_found' | 'failed') => void;
}

interface Entry {
  job: JobStarted;
  attempts: number;
}

/** The job fields of a runner's status, upstream's names and formats (repository is `owner/repo`). */
export function jobStatusPatch(job: JobStarted): { status: EphemeralRunnerStatus } {
  return {
    status: {
      jobRequestId: job.runnerRequestId,
      jobRepositoryName: `${job.ownerName}/${job.repositoryName}`,
      jobId: job.jobId,
      workflowRunId: job.workflowRunId,
      jobWorkflowRef: job.jobWorkflowRef,
      jobDisplayName: job.jobDisplayName,
    },
  };
}

/**
 * Writes each started job onto its runner's EphemeralRunner status, off the scaling path: the message
 * loop only queues, and a worker of its own sends the patches through its own rate limiter. A burst of
 * JobStarted (upstream PR #4668 measured 100 of these before one scale patch) therefore never delays
 * the next EphemeralRunnerSet patch. One entry per runner: a later job for the same runner replaces an
 * unsent one. A runner that is already gone (NotFound) is skipped.
 */
export class JobBookkeeping {
  private readonly queue = new Map<string, Entry>();
  private readonly limiter: TokenBucketRateLimiter;
  private readonly clock: Clock;
  private readonly maxAttempts: number;
  private readonly stopping = new AbortController();
  private wake: (() => void) | undefined;
  private worker: Promise<void> | undefined;

  constructor(
    private readonly client: PatchClient,
    private readonly o: JobBookkeepingOptions,
  ) {
    this.clock = o.clock ?? systemClock;
    this.limiter = new TokenBucketRateLimiter(o.qps ?? 10, o.burst ?? 20, this.clock);
    this.maxAttempts = o.maxAttempts ?? 5;
  }

  get depth(): number {
    return this.queue.size;
  }

  /** Queues the status patch for the job's runner; returns at once. */
  record(job: JobStarted): void {
    if (!job.runnerName) {
      this.o.logger.warn('A started job names no runner; its runner status is not recorded', {
        jobId: job.jobId,
      });
      return;
    }
    this.queue.delete(job.runnerName);
    this.queue.set(job.runnerName, { job, attempts: 0 });
    this.o.onQueueDepth?.(this.queue.size);
    this.wake?.();
  }

  start(): void {
    this.worker ??= this.run();
  }

  /** Sends what is queued until `drainMs` has passed, then stops; what is left is dropped (and logged). */
  async stop(drainMs: number): Promise<void> {
    if (!this.worker) return;
    const deadline = this.clock.now() + drainMs;
    while (this.queue.size > 0 && this.clock.now() < deadline) {
      await sleep(this.clock, 50);
    }
    this.stopping.abort();
    this.wake?.();
    await this.worker;
    if (this.queue.size > 0) {
      this.o.logger.warn('Stopped with runner status patches unsent', { unsent: this.queue.size });
    }
  }

  private async run(): Promise<void> {
    const signal = this.stopping.signal;
    while (!signal.aborted) {
      const next = this.queue.entries().next();
      if (next.done) {
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = undefined;
        continue;
      }
      const [runnerName, entry] = next.value;
      const waitMs = this.limiter.when();
      if (waitMs > 0) await sleep(this.clock, waitMs, signal);
      if (signal.aborted) break;
      // The entry may have been replaced by a newer job while waiting; send whatever is current.
      const current = this.queue.get(runnerName) ?? entry;
      this.queue.delete(runnerName);
      await this.send(runnerName, current);
      this.o.onQueueDepth?.(this.queue.size);
    }
  }

  private async send(runnerName: string, entry: Entry): Promise<void> {
    const log = this.o.logger.child({ ephemeralRunner: `${this.o.namespace}/${runnerName}` });
    try {
      await this.client.mergePatchStatus(
        EphemeralRunnerKind,
        this.o.namespace,
        runnerName,
        jobStatusPatch(entry.job),
      );
      this.o.onPatched?.('patched');
      log.debug('Recorded the job on the runner', { jobId: entry.job.jobId });
    } catch (err) {
      if (isNotFound(err)) {
        this.o.onPatched?.('not_found');
        log.info('The runner of a started job is gone; nothing to record', { jobId: entry.job.jobId });
        return;
      }
      entry.attempts++;
      if (entry.attempts >= this.maxAttempts) {
        this.o.onPatched?.('failed');
        log.error('Giving up recording the job on the runner', err, {
          jobId: entry.job.jobId,
          attempts: entry.attempts,
        });
        return;
      }
      log.warn('Recording the job on the runner failed; retrying', {
        jobId: entry.job.jobId,
        attempts: entry.attempts,
        error: String(err),
      });
      // To the back of the queue, unless a newer job for this runner arrived meanwhile.
      if (!this.queue.has(runnerName)) this.queue.set(runnerName, entry);
      await sleep(this.clock, Math.min(30_000, 500 * 2 ** (entry.attempts - 1)), this.stopping.signal);
    }
  }
}
