import { type CanaryResults, canarySetOfRunner } from '@aro/api/lean';
import type { JobCompleted, JobStarted } from '@aro/actions/lean';

/** Results that judge a runner template; canceled and skipped jobs say nothing about it. */
const JUDGED = new Set(['succeeded', 'failed']);

/**
 * Job results of a canary roll-out (see @aro/api's canary.ts), counted from the messages the listener
 * reads anyway. A canary runner is told by its name (`<set>-canary-<hash>-runner-<id>`): the listener
 * may not read objects. The window opens with the first job seen on a runner of a canary set; from
 * then on jobs of the set's own runners count as the baseline. A later canary set starts a new window.
 *
 * The counts ride on the scale patch the listener writes after every message
 * ({@link CanaryTally.annotation}): no write of their own. Without a canary runner ever seen there is
 * nothing to write, so a set without canary sends exactly what it sent before. The counts live in this
 * process: a listener restarted during a canary starts them again (the canary then waits for its jobs
 * anew; it never promotes on fewer).
 */
export class CanaryTally {
  private window: CanaryResults | undefined;

  constructor(private readonly runnerSetName: string) {}

  jobStarted(job: Pick<JobStarted, 'runnerName'>): void {
    this.windowOf(job.runnerName);
  }

  jobCompleted(job: JobCompleted): void {
    if (!JUDGED.has(job.result)) return;
    const failed = job.result === 'failed';
    const window = this.windowOf(job.runnerName);
    // A canary runner's job always lands in the window of its own set (windowOf opens it).
    if (window) {
      window.jobs++;
      if (failed) {
        window.failed++;
        window.firstFailure ??= `job ${JSON.stringify(job.jobDisplayName)} of ${job.ownerName}/${job.repositoryName} ${job.result} on runner ${job.runnerName}`;
      }
    } else if (this.window) {
      this.window.baselineJobs++;
      if (failed) this.window.baselineFailed++;
    }
  }

  /** The counts as the `canary-results` annotation's value; undefined before any canary job. */
  annotation(): string | undefined {
    return this.window ? JSON.stringify(this.window) : undefined;
  }

  /** The window of the runner's canary set, opened (or replacing an older set's) on its first job. */
  private windowOf(runnerName: string): CanaryResults | undefined {
    const set = canarySetOfRunner(this.runnerSetName, runnerName ?? '');
    if (!set) return undefined;
    if (this.window?.set !== set) {
      this.window = { set, jobs: 0, failed: 0, baselineJobs: 0, baselineFailed: 0 };
    }
    return this.window;
  }
}
