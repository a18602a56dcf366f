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

  async start(stop: AbortSignal, cancel?: AbortSignal): Promise<void> {
    const signal = cancel ? AbortSignal.any([stop, cancel]) : stop;
    let pass: Promise<void> = Promise.resolve();
    const runPass = (): void => {
      this.unschedule();
      pass = this.task.runOnce(signal).then(
        (delayMs) => this.schedule(delayMs, stop, runPass),
        (err: unknown) => {
          if (!signal.aborted) this.logger.error('Scheduled task failed', err, { task: this.task.name });
          this.schedule(this.task.afterFailureMs ?? 60_000, stop, runPass);
        },
      );
    };
    runPass();
    await new Promise<void>((resolve) => {
      if (stop.aborted) resolve();
      else stop.addEventListener('abort', () => resolve(), { once: true });
    });
    this.unschedule();
    await pass;
    this.unschedule();
  }

  private schedule(delayMs: number, stop: AbortSignal, run: () => void): void {
    if (stop.aborted) return;
    const timer = setTimeout(run, Math.max(MIN_DELAY_MS, delayMs));
    timer.unref();
    this.scheduler.addTimeout(this.task.name, timer);
  }

  private unschedule(): void {
    if (this.scheduled()) this.scheduler.deleteTimeout(this.task.name);
  }
}
