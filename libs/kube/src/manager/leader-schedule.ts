import type { SchedulerRegistry } from '@nestjs/schedule';
import type { Logger } from '@aro/observability';
import type { Runnable } from './runnable';

/** Periodic work that only the leader may do: one pass, which says when the next one is due. */
export interface LeaderTask {
  /** Names the timer in the SchedulerRegistry, the runnable in the manager, and the task in logs. */
  readonly name: string;
  /** One pass. Resolves to the delay until the next pass, in ms. */
  runOnce(signal: AbortSignal): Promise<number>;
  /** Delay after a pass that threw; 60 s by default. */
  readonly afterFailureMs?: number;
}

/** Passes never come closer than this, whatever a task says: a bug must not become a hot loop. */
const MIN_DELAY_MS = 1_000;

/**
 * Runs a {@link LeaderTask} through @nestjs/schedule's SchedulerRegistry while this replica leads.
 *
 * Added to the manager as a leader-only runnable: the manager starts it when this replica becomes
 * leader (the first pass runs at once, the next one is a timeout in the registry under the task's
 * name) and stops it when leadership is lost or the app stops, which deletes the timeout, so a standby
 * never runs the task and `schedulerRegistry.getTimeouts()` shows what is scheduled right now.
 * Passes never overlap: the next timeout is set only after a pass ends.
 */
export class LeaderSchedule implements Runnable {
  readonly needLeaderElection = true;
  /** While leading: brings the next pass forward; undefined otherwise. */
  private bringForward: ((delayMs: number) => void) | undefined;

  constructor(
    private readonly scheduler: SchedulerRegistry,
    private readonly task: LeaderTask,
    private readonly logger: Logger,
  ) {}

  get name(): string {
    return this.task.name;
  }

  /** Whether a pass is scheduled in the registry right now. */
  scheduled(): boolean {
    return this.scheduler.doesExist('timeout', this.task.name);
  }

  /**
   * Has the next pass run within `delayMs` (never sooner than the floor), when it is due later: work
   * that a pass should see soon, without waiting for the task's own cadence. Requests made during a
   * pass apply to the pass after it; many requests make one pass. A no-op while not leading (the pass at
   * election sees the work).
   */
  runWithin(delayMs: number): void {
    this.bringForward?.(delayMs);
  }

  async start(stop: AbortSignal, cancel?: AbortSignal): Promise<void> {
    const signal = cancel ? AbortSignal.any([stop, cancel]) : stop;
    let pass: Promise<void> = Promise.resolve();
    /** When the scheduled pass is due; undefined while a pass runs. */
    let dueAt: number | undefined;
    /** The earliest pass asked for while one was running. */
    let requestedAt = Infinity;
    const scheduleAfterPass = (delayMs: number): void => {
      const at = Date.now() + Math.max(MIN_DELAY_MS, Math.min(delayMs, requestedAt - Date.now()));
      requestedAt = Infinity;
      dueAt = at;
      this.schedule(at - Date.now(), stop, runPass);
    };
    const runPass = (): void => {
      this.unschedule();
      dueAt = undefined;
      pass = this.task.runOnce(signal).then(scheduleAfterPass, (err: unknown) => {
        if (!signal.aborted) this.logger.error('Scheduled task failed', err, { task: this.task.name });
        scheduleAfterPass(this.task.afterFailureMs ?? 60_000);
      });
    };
    this.bringForward = (delayMs) => {
      if (stop.aborted) return;
      const at = Date.now() + Math.max(MIN_DELAY_MS, delayMs);
      if (dueAt === undefined) requestedAt = Math.min(requestedAt, at);
      else if (at < dueAt) {
        this.unschedule();
        dueAt = at;
        this.schedule(at - Date.now(), stop, runPass);
      }
    };
    runPass();
    await new Promise<void>((resolve) => {
      if (stop.aborted) resolve();
      else stop.addEventListener('abort', () => resolve(), { once: true });
    });
    this.bringForward = undefined;
    this.unschedule();
    await pass;
    this.unschedule();
  }

  private schedule(delayMs: number, stop: AbortSignal, run: () => void): void {
    if (stop.aborted) return;
    // A schedule: the timeout is the SchedulerRegistry's (added below), so it shows there and stops with leadership.
    const timer = setTimeout(run, Math.max(0, delayMs));
    timer.unref();
    this.scheduler.addTimeout(this.task.name, timer);
  }

  private unschedule(): void {
    if (this.scheduled()) this.scheduler.deleteTimeout(this.task.name);
  }
}
