import {
  JobAvailable,
  JobCompleted,
  JobStarted,
  RunnerScaleSet,
  RunnerScaleSetMessage,
  RunnerScaleSetSession,
  RunnerScaleSetStatistic,
  parseJobMessages,
} from '@aro/actions/lean';
import { Clock, sleep } from '@aro/kube/lean';
import type { Logger } from '@aro/observability/lean';
import { Backoff, BackoffPolicies, FailureKind, classifyFailure } from './failures';
import { JobAcquirer } from './job-acquirer';
import type { ListenerMetrics } from './listener-metrics';
import type { ScalingPort } from './scaling';
import type { MessageSession } from './session';

/** The message-queue calls of the Actions client (ActionsServiceClient satisfies it). */
export interface QueueApi {
  getMessage(
    messageQueueUrl: string,
    queueToken: string,
    lastMessageId: number,
    maxCapacity: number,
    opts?: { signal?: AbortSignal },
  ): Promise<RunnerScaleSetMessage | undefined>;
  deleteMessage(
    messageQueueUrl: string,
    queueToken: string,
    messageId: number,
    opts?: { signal?: AbortSignal },
  ): Promise<void>;
  acquireJobs(
    scaleSetId: number,
    queueToken: string,
    requestIds: number[],
    opts?: { signal?: AbortSignal },
  ): Promise<number[]>;
  getRunnerScaleSetById(id: number, opts?: { signal?: AbortSignal }): Promise<RunnerScaleSet>;
}

export interface PollLoopOptions {
  scaleSetId: number;
  scaleSetName: string;
  maxRunners: number;
  api: QueueApi;
  session: MessageSession;
  /** The scale set's side: desired count, started and completed jobs. */
  scaling: ScalingPort;
  metrics: ListenerMetrics;
  clock: Clock;
  logger: Logger;
  backoff: BackoffPolicies;
  random?: () => number;
  /** Called after every iteration, handled or waited out: the liveness heartbeat. */
  onCycle?: () => void;
}

/**
 * The listener's loop: open the session, scale to what it reports, then long-poll the queue for ever.
 *
 * Each message is handled once: it is acknowledged (DELETE) first, its id becomes `lastMessageId`
 * (which acknowledges it again on the next poll should the DELETE have failed), and a redelivered id at
 * or below it is only acknowledged. Then the offered jobs are acquired within capacity, started jobs are
 * queued for the runners' status (off this path), and the desired count is patched. An empty poll
 * re-reads the scale set's statistics (the queue sends none when idle, so the gauges would otherwise
 * stay at the last busy values) and patches the desired count again, which is how the set converges
 * back to minRunners.
 *
 * Failures never end the loop: each is classified, counted, logged with the scale set's name and waited
 * out with backoff; only the abort signal (shutdown) ends it.
 */
export class PollLoop {
  private lastMessageIdValue = 0;
  private latestStats: RunnerScaleSetStatistic | undefined;
  private readonly acquirer: JobAcquirer;
  private readonly backoff: Backoff;

  constructor(private readonly o: PollLoopOptions) {
    this.backoff = new Backoff(o.backoff, o.random);
    this.acquirer = new JobAcquirer({
      maxRunners: o.maxRunners,
      logger: o.logger,
      onAcquired: (n) => o.metrics.jobsAcquired(n),
      onNotAcquired: (reason, n) => o.metrics.jobsNotAcquired(reason, n),
    });
  }

  get lastMessageId(): number {
    return this.lastMessageIdValue;
  }

  async run(signal: AbortSignal): Promise<void> {
    // The first iteration opens the session (and scales to its statistics): see cycle().
    while (!signal.aborted) {
      const result = await this.guard(signal, () => this.cycle(signal));
      this.o.metrics.pollCycle(result ?? 'failed');
      this.o.onCycle?.();
    }
  }

  /** A new session's statistics are the service's view as of now: scale to them at once. */
  private async adoptSession(session: RunnerScaleSetSession): Promise<void> {
    if (session.statistics) this.latestStats = session.statistics;
    this.o.logger.info('Scaling to the session statistics', {
      assignedJobs: this.latestStats?.totalAssignedJobs ?? 0,
      lastMessageId: this.lastMessageIdValue,
    });
    await this.scale();
  }

  /** Rotates the queue token; a session replaced on the way (the old one was gone) is adopted. */
  private async refreshSession(signal: AbortSignal): Promise<void> {
    const before = this.o.session.sessionId;
    const session = await this.o.session.refresh(signal);
    if (session.sessionId !== before) await this.adoptSession(session);
  }

  /** One poll: pending writes first, then the long poll and what it brought. */
  private async cycle(signal: AbortSignal): Promise<'message' | 'empty'> {
    // The first session, or a replacement that could not be opened in recovery (open() waits out
    // conflicts and failures by itself; it only ends early on shutdown).
    if (this.o.session.state !== 'open') await this.adoptSession(await this.o.session.open(signal));
    await this.o.scaling.flush();
    if (this.acquirer.pendingRetries > 0) await this.acquire([], signal);
    if (this.o.session.refreshDue()) await this.refreshSession(signal);
    const message = await this.o.api.getMessage(
      this.o.session.queueUrl,
      this.o.session.queueToken,
      this.lastMessageIdValue,
      this.o.maxRunners,
      { signal },
    );
    if (!message) {
      await this.onEmptyPoll(signal);
      return 'empty';
    }
    await this.onMessage(message, signal);
    return 'message';
  }

  private async onMessage(message: RunnerScaleSetMessage, signal: AbortSignal): Promise<void> {
    const id = message.messageId;
    await this.acknowledge(id, signal);
    if (id <= this.lastMessageIdValue) {
      this.o.logger.debug('Acknowledged a message delivered again', { messageId: id });
      return;
    }
    this.lastMessageIdValue = id;
    this.o.metrics.message();
    if (message.statistics) this.latestStats = message.statistics;
    let jobs: ReturnType<typeof parseJobMessages> = [];
    try {
      jobs = parseJobMessages(message);
    } catch (err) {
      this.o.logger.error('Skipping a message the listener cannot read', err, { messageId: id });
    }
    const available = jobs.filter((j): j is JobAvailable => j.messageType === 'JobAvailable');
    const started = jobs.filter((j): j is JobStarted => j.messageType === 'JobStarted');
    const completed = jobs.filter((j): j is JobCompleted => j.messageType === 'JobCompleted');
    this.o.logger.debug('Received a message', {
      messageId: id,
      available: available.length,
      assigned: jobs.filter((j) => j.messageType === 'JobAssigned').length,
      started: started.length,
      completed: completed.length,
      assignedJobs: this.latestStats?.totalAssignedJobs,
    });
    this.o.scaling.jobsChanged(
      started,
      completed,
      jobs.filter((j) => j.messageType === 'JobAssigned'),
    );
    // Scale before acquiring: the desired count comes from the service's statistics, and the runners it
    // asks for should not wait on an acquire call (the next message's statistics count what it takes).
    await this.scale();
    if (available.length > 0) await this.acquire(available, signal);
  }

  private async onEmptyPoll(signal: AbortSignal): Promise<void> {
    try {
      const scaleSet = await this.o.api.getRunnerScaleSetById(this.o.scaleSetId, { signal });
      if (scaleSet.statistics) this.latestStats = scaleSet.statistics;
    } catch (err) {
      if (signal.aborted) throw err;
      // Only the gauges' freshness depends on it; the last statistics still decide the count.
      this.o.logger.debug('Could not re-read the scale set statistics', { error: String(err) });
    }
    await this.scale();
  }

  private async acquire(available: JobAvailable[], signal: AbortSignal): Promise<void> {
    await this.acquirer.acquire(available, this.latestStats, (ids) =>
      this.withQueueToken(signal, (token) =>
        this.o.api.acquireJobs(this.o.scaleSetId, token, ids, { signal }),
      ),
    );
  }

  private async acknowledge(messageId: number, signal: AbortSignal): Promise<void> {
    try {
      await this.withQueueToken(signal, (token) =>
        this.o.api.deleteMessage(this.o.session.queueUrl, token, messageId, { signal }),
      );
    } catch (err) {
      if (signal.aborted) throw err;
      // The next poll carries lastMessageId, which acknowledges it as well.
      this.o.logger.warn('Acknowledging a message failed; the next poll acknowledges it', {
        scaleSet: this.o.scaleSetName,
        messageId,
        error: String(err),
      });
    }
  }

  /** Runs a queue-token call; on 401 refreshes the session and runs it once more, as the Go client. */
  private async withQueueToken<T>(signal: AbortSignal, call: (token: string) => Promise<T>): Promise<T> {
    try {
      return await call(this.o.session.queueToken);
    } catch (err) {
      if (classifyFailure(err) !== 'queue-token-expired') throw err;
      this.o.metrics.failure('queue-token-expired');
      await this.refreshSession(signal);
      return call(this.o.session.queueToken);
    }
  }

  private scale(): Promise<void> {
    return this.o.scaling.scale(this.latestStats);
  }

  /**
   * Runs one step; a failure is classified, counted, logged and waited out (resolves undefined). Only
   * the abort signal ends it early. 401 on the queue refreshes the session at once, and a session the
   * service no longer knows is replaced, both without waiting.
   */
  private async guard<T>(signal: AbortSignal, step: () => Promise<T>): Promise<T | undefined> {
    try {
      const result = await step();
      this.backoff.reset();
      return result;
    } catch (err) {
      if (signal.aborted) return undefined;
      const kind = classifyFailure(err);
      this.o.metrics.failure(kind);
      if (kind === 'queue-token-expired' || kind === 'session-gone') {
        await this.recoverSession(kind, err, signal);
        return undefined;
      }
      const waitMs = this.backoff.next(kind);
      this.log(kind, err, waitMs);
      await sleep(this.o.clock, waitMs, signal);
      return undefined;
    }
  }

  private async recoverSession(kind: FailureKind, cause: unknown, signal: AbortSignal): Promise<void> {
    try {
      if (kind === 'queue-token-expired') await this.refreshSession(signal);
      else await this.adoptSession(await this.o.session.reopen(signal, cause));
    } catch (err) {
      if (signal.aborted) return;
      const next = classifyFailure(err);
      this.o.metrics.failure(next);
      const waitMs = this.backoff.next(next);
      this.log(next, err, waitMs);
      await sleep(this.o.clock, waitMs, signal);
    }
  }

  private log(kind: FailureKind, err: unknown, waitMs: number): void {
    const fields = {
      scaleSet: this.o.scaleSetName,
      scaleSetId: this.o.scaleSetId,
      failure: kind,
      consecutiveFailures: this.backoff.consecutiveFailures,
      retryInMs: waitMs,
      error: err instanceof Error ? err.message : String(err),
    };
    if (kind === 'unauthorized') {
      this.o.logger.error(
        'The Actions service refused the credentials (revoked token, or missing permission); backing off',
        undefined,
        fields,
      );
    } else if (kind === 'rate-limited') {
      this.o.logger.warn('Rate limited by the Actions service; backing off', fields);
    } else {
      this.o.logger.warn('The poll loop failed; backing off', fields);
    }
  }
}
