import type { Registry } from 'prom-client';
import type { EphemeralRunner } from '@aro/api';
import { isJobStillRunning, isRunnerNotFound } from '@aro/actions';
import type { ActionsServiceClient } from '@aro/actions';
import { type Runnable, exponentialBackoffMs } from '@aro/kube';
import { type SecretResolver, configHolderOf } from '@aro/secrets';
import { Logger, getOrCreateCounter, getOrCreateGauge, metricsRegistry } from '@aro/observability';

/** Gives the Actions client for the scale set a runner belongs to (the secret resolver, in the app). */
export interface ActionsClientProvider {
  getActionsClient(runner: EphemeralRunner, signal?: AbortSignal): Promise<ActionsServiceClient>;
}

/** The provider every composition uses: the runner's GitHub configuration through the secret resolver. */
export function actionsClientsFrom(resolver: SecretResolver): ActionsClientProvider {
  return { getActionsClient: (runner, signal) => resolver.getActionsClient(configHolderOf(runner), signal) };
}

export interface UnregistrationQueueOptions {
  actions: ActionsClientProvider;
  logger: Logger;
  /** Concurrent removals; never fewer than one. */
  workers?: number;
  /** Wait before asking again about a runner the service says is still executing a job. */
  jobStillRunningRetryMs?: number;
  /** Backoff for any other failure: first wait, doubled per attempt up to the max. */
  retryInitialMs?: number;
  retryMaxMs?: number;
  /** Attempts before a removal that keeps failing is given up to the orphan sweep. */
  maxAttempts?: number;
  /** How long a shutdown waits for queued and in-flight removals before dropping them. */
  drainTimeoutMs?: number;
  registry?: Registry;
}

interface Unregistration {
  /** A copy of the runner, taken before it goes: the worker needs its GitHub configuration. */
  runner: EphemeralRunner;
  runnerId: number;
  /** Failed attempts so far; busy answers are not failures and do not count. */
  attempts: number;
  /** Whether the service was asked already (a drain makes only first calls). */
  asked: boolean;
  readyAt: number;
}

/**
 * Removes runner registrations from the Actions service outside the reconcile loop.
 *
 * Finalizing a runner is two unrelated pieces of work: deleting its pod and secret, which is local
 * and fast, and removing its registration, which goes to an external, eventually consistent service.
 * Doing them in sequence would put pod cleanup behind that service, so a burst of finished jobs
 * would leave pods standing while their removals wait in line. The reconciler hands the removal
 * here and moves on: `push` copies what a worker needs and returns without touching the network,
 * and a fixed pool of workers makes the calls.
 *
 * A registration is queued once: pushing a runner that is queued or being removed is a no-op, so
 * the service is never asked twice. A runner still executing a job is asked about again after
 * `jobStillRunningRetryMs`, without using up its retry budget (a long job is not a failure); any
 * other failure backs off and retries up to `maxAttempts`. The service's runner-not-found answer is
 * the outcome the request wanted; a bare 404 is not (a wrong URL or a proxy answers that too, and
 * taking it for success would leak the registration), so it is retried as any failure.
 *
 * The queue lives in memory, and deliberately so: making it durable would cost an API write per
 * runner, the cost this type exists to avoid. What a crash or a lost leadership drops is found again
 * by the OrphanRegistrationSweep, which compares the service's registrations with the
 * EphemeralRunners that exist.
 */
export class UnregistrationQueue implements Runnable {
  readonly name = 'runner-unregistration';
  readonly needLeaderElection = true;

  private readonly pending = new Map<string, Unregistration>();
  private readonly inFlight = new Set<string>();
  /** The wake-up of every parked worker; each removes its own as it resumes, whatever woke it. */
  private readonly parked = new Set<() => void>();
  private running = false;
  private readonly opts: Required<Omit<UnregistrationQueueOptions, 'registry'>>;
  private readonly depth;
  private readonly outcomes;

  constructor(options: UnregistrationQueueOptions) {
    // `??` rather than a spread of defaults: an option passed as undefined must not erase its default.
    this.opts = {
      actions: options.actions,
      logger: options.logger,
      workers: Math.max(1, options.workers ?? 4),
      jobStillRunningRetryMs: options.jobStillRunningRetryMs ?? 30_000,
      retryInitialMs: options.retryInitialMs ?? 1_000,
      retryMaxMs: options.retryMaxMs ?? 5 * 60_000,
      maxAttempts: options.maxAttempts ?? 10,
      drainTimeoutMs: options.drainTimeoutMs ?? 10_000,
    };
    const registry = options.registry ?? metricsRegistry();
    this.depth = getOrCreateGauge(registry, {
      name: 'aro_runner_unregistration_queue_depth',
      help: 'Runner registrations waiting to be removed from the Actions service, including those in flight.',
    });
    this.outcomes = getOrCreateCounter(registry, {
      name: 'aro_runner_unregistrations_total',
      help: 'Attempts to remove a runner registration, by outcome: removed, already_gone, job_still_running, retried, failed (given up), dropped (shutdown).',
      labelNames: ['outcome'],
    });
  }

  /**
   * Queues the removal of `runnerId`, held by `runner`. Never blocks and never fails; returns
   * whether the request was taken (false when the same registration is already queued).
   */
  push(runner: EphemeralRunner, runnerId: number): boolean {
    const key = this.keyOf(runner, runnerId);
    if (this.pending.has(key) || this.inFlight.has(key)) {
      this.opts.logger.debug('Runner is already queued for removal from the service', {
        namespace: runner.metadata?.namespace,
        name: runner.metadata?.name,
        runnerId,
      });
      return false;
    }
    this.pending.set(key, {
      runner: structuredClone(runner),
      runnerId,
      attempts: 0,
      asked: false,
      readyAt: Date.now(),
    });
    this.updateDepth();
    this.wake();
    return true;
  }

  /** Registrations queued or being removed right now. */
  size(): number {
    return this.pending.size + this.inFlight.size;
  }

  /** Whether a removal of this registration is queued or in flight. */
  has(runner: EphemeralRunner, runnerId: number): boolean {
    const key = this.keyOf(runner, runnerId);
    return this.pending.has(key) || this.inFlight.has(key);
  }

  /**
   * Works until `signal` aborts, then drains for at most `drainTimeoutMs`; `cancel` (leadership lost,
   * or the manager's own deadline) ends in-flight calls at once.
   */
  async start(signal: AbortSignal, cancel?: AbortSignal): Promise<void> {
    this.running = true;
    this.opts.logger.info('Starting runner unregistration workers', { workers: this.opts.workers });
    const stopping = new AbortController();
    cancel?.addEventListener('abort', () => stopping.abort(), { once: true });
    const workers = Array.from({ length: this.opts.workers }, () => this.work(signal, stopping.signal));
    await new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      else signal.addEventListener('abort', () => resolve(), { once: true });
    });
    this.wake();

    // Drain: what is ready now still gets its call, within the deadline; waiting retries do not,
    // since a runner still executing a job will not finish in a shutdown's time.
    // Not a schedule: a deadline on this one drain, gone with it.
    const deadline = setTimeout(() => stopping.abort(), this.opts.drainTimeoutMs);
    try {
      await Promise.all(workers);
    } finally {
      clearTimeout(deadline);
      this.running = false;
    }
    const dropped = this.pending.size;
    if (dropped > 0) this.outcomes.inc({ outcome: 'dropped' }, dropped);
    this.pending.clear();
    this.updateDepth();
    this.opts.logger.info('Stopped runner unregistration workers', { dropped });
  }

  private async work(stop: AbortSignal, hardStop: AbortSignal): Promise<void> {
    for (;;) {
      if (hardStop.aborted) return;
      const next = this.takeReady(stop.aborted);
      if (next) {
        await this.unregister(next, hardStop);
        continue;
      }
      if (stop.aborted) return;
      await this.sleepUntilWoken(this.nextWaitMs(), stop);
    }
  }

  private takeReady(draining: boolean): [string, Unregistration] | undefined {
    const now = Date.now();
    for (const [key, request] of this.pending) {
      if (request.readyAt <= now && (!draining || !request.asked)) {
        this.pending.delete(key);
        this.inFlight.add(key);
        return [key, request];
      }
    }
    return undefined;
  }

  private nextWaitMs(): number {
    let wait = 30_000;
    const now = Date.now();
    for (const request of this.pending.values()) wait = Math.min(wait, Math.max(0, request.readyAt - now));
    return wait;
  }

  private async unregister([key, request]: [string, Unregistration], signal: AbortSignal): Promise<void> {
    const { runner, runnerId } = request;
    const log = this.opts.logger.child({
      namespace: runner.metadata?.namespace,
      name: runner.metadata?.name,
      runnerId,
    });
    let retryAfterMs: number | undefined;
    let attempts = request.attempts;
    try {
      const client = await this.opts.actions.getActionsClient(runner, signal);
      await client.removeRunner(runnerId, { signal });
      this.outcomes.inc({ outcome: 'removed' });
      log.info('Removed the runner from the service');
    } catch (err) {
      if (isRunnerNotFound(err)) {
        this.outcomes.inc({ outcome: 'already_gone' });
        log.info('Runner is already removed from the service');
      } else if (isJobStillRunning(err)) {
        this.outcomes.inc({ outcome: 'job_still_running' });
        retryAfterMs = this.opts.jobStillRunningRetryMs;
        log.info('Runner is still executing a job, asking again later', { retryAfterMs });
      } else if (signal.aborted) {
        this.outcomes.inc({ outcome: 'dropped' });
        log.warn('Shutting down before the runner could be removed; the orphan sweep will find it');
      } else if (++attempts >= this.opts.maxAttempts) {
        this.outcomes.inc({ outcome: 'failed' });
        log.error('Giving up removing the runner from the service; the orphan sweep will retry', err, {
          attempts,
        });
      } else {
        this.outcomes.inc({ outcome: 'retried' });
        retryAfterMs = exponentialBackoffMs(attempts, this.opts.retryInitialMs, this.opts.retryMaxMs);
        log.warn('Failed to remove the runner from the service, retrying', {
          err: err instanceof Error ? err.message : String(err),
          attempt: attempts,
          retryAfterMs,
        });
      }
    } finally {
      this.inFlight.delete(key);
    }
    if (retryAfterMs !== undefined && this.running) {
      // Re-queued under the same key: the claim is kept, so nothing can queue it alongside.
      // Only failures count: a busy runner is asked again as often as its job takes.
      this.pending.set(key, {
        ...request,
        attempts,
        asked: true,
        readyAt: Date.now() + retryAfterMs,
      });
      this.wake();
    }
    this.updateDepth();
  }

  private sleepUntilWoken(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      // A set, not a chain of closures: a worker that resumes on its own timer unlinks itself, so a
      // day of idle 30 s naps leaves nothing behind for the next wake to walk.
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.parked.delete(done);
        resolve();
      };
      // Not a schedule: one removal's retry backoff, cut short by a drain.
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.parked.add(done);
    });
  }

  /** Wakes every parked worker; the first to find work takes it. */
  private wake(): void {
    for (const done of [...this.parked]) done();
  }

  private updateDepth(): void {
    this.depth.set(this.size());
  }

  /*
   * The runner ID alone would be the obvious key, but the service assigns it and it is unique only
   * within one GitHub scope, and one controller serves many; the runner is named as well.
   */
  private keyOf(runner: EphemeralRunner, runnerId: number): string {
    return `${runner.metadata?.namespace}/${runner.metadata?.name}/${runnerId}`;
  }
}
