import type { EnqueueJobOptions, JobResult, JobView, RunnerView } from '../types';
import { type Jobs, jobView } from './jobs';
import type { Job, Runner } from './model';
import { runnerView } from './registrations';
import type { ActionsStore } from './store';

/**
 * What a runner process does, driven by tests through the admin API: it connects, is handed a job,
 * runs it, reports its end, and exits. A JIT runner is ephemeral: once a job has started on it, it
 * takes no other.
 */
export class RunnerSimulation {
  constructor(
    private readonly store: ActionsStore,
    private readonly jobs: Jobs,
  ) {}

  private runnerNamed(runnerName: string): Runner {
    const matches = [...this.store.runners.values()].filter(
      (r) => r.name.toLowerCase() === runnerName.toLowerCase(),
    );
    if (matches.length === 0) throw new Error(`no runner registered with name "${runnerName}"`);
    if (matches.length > 1) throw new Error(`runner name "${runnerName}" is registered in several tenants`);
    return matches[0];
  }

  connected(runnerName: string): RunnerView {
    const r = this.runnerNamed(runnerName);
    r.online = true;
    this.jobs.autoStart(r.scaleSetId);
    return runnerView(r);
  }

  /**
   * Binds a job to a runner without starting it. `job` picks it: a job id, options for a new job on
   * the runner's scale set, or (absent) the oldest acquired-and-unbound, else the oldest offered job of
   * the scale set, else a new one.
   */
  assignJob(runnerName: string, job?: string | EnqueueJobOptions): JobView {
    const r = this.runnerNamed(runnerName);
    if (r.jobId) throw new Error(`runner "${runnerName}" already holds job ${r.jobId}`);
    this.refuseSpent(r);
    const target = this.pickJob(r, job);
    this.jobs.bind(target, r);
    return jobView(target);
  }

  startJob(runnerName: string, job?: string | EnqueueJobOptions): JobView {
    const r = this.runnerNamed(runnerName);
    let target: Job;
    if (r.jobId && (job === undefined || job === r.jobId)) {
      target = this.store.jobs.get(r.jobId) as Job;
    } else {
      if (r.jobId) throw new Error(`runner "${runnerName}" already holds job ${r.jobId}`);
      this.refuseSpent(r);
      target = this.pickJob(r, job);
      this.jobs.bind(target, r);
    }
    if (target.state !== 'running') this.jobs.start(target);
    return jobView(target);
  }

  /** An ephemeral runner that has run its job takes no other, as on the real service. */
  private refuseSpent(r: Runner): void {
    if (r.ranJobId !== null) {
      throw new Error(`runner "${r.name}" is ephemeral and already ran job ${r.ranJobId}`);
    }
  }

  private pickJob(r: Runner, job?: string | EnqueueJobOptions): Job {
    if (typeof job === 'string') {
      const j = this.store.jobs.get(job);
      if (!j) throw new Error(`no job with id ${job}`);
      if (j.state === 'completed' || j.state === 'running' || j.runnerId !== null) {
        throw new Error(`job ${job} is ${j.state}${j.runnerName ? ` on runner ${j.runnerName}` : ''}`);
      }
      if (j.scaleSetId !== null && j.scaleSetId !== r.scaleSetId) {
        throw new Error(
          `job ${job} belongs to scale set ${j.scaleSetId}, runner "${r.name}" to ${r.scaleSetId}`,
        );
      }
      return j;
    }
    if (job === undefined) {
      const mine = [...this.store.jobs.values()]
        .filter((j) => j.scaleSetId === r.scaleSetId && j.runnerId === null)
        .sort((a, b) => a.runnerRequestId - b.runnerRequestId);
      const existing = mine.find((j) => j.state === 'acquired') ?? mine.find((j) => j.state === 'available');
      if (existing) return existing;
    }
    const created = this.jobs.enqueue({ ...(job ?? {}), scaleSetId: r.scaleSetId });
    return this.store.jobs.get(created.jobId) as Job;
  }

  completeJob(jobId: string, result: JobResult): JobView {
    const job = this.store.jobs.get(jobId);
    if (!job) throw new Error(`no job with id ${jobId}`);
    if (job.state === 'completed') throw new Error(`job ${jobId} already completed (${job.result})`);
    this.jobs.finish(job, result);
    return jobView(job);
  }

  /**
   * The runner process ended. A job it was running fails (or succeeds on exit 0); one bound but not
   * started goes back to the scale set. On exit 0 the ephemeral runner removes its own registration;
   * otherwise the registration stays, offline, for the controller to remove.
   */
  exited(runnerName: string, exitCode: number): void {
    const r = this.runnerNamed(runnerName);
    if (r.jobId) {
      const job = this.store.jobs.get(r.jobId);
      if (job?.state === 'running') {
        this.jobs.finish(job, exitCode === 0 ? 'succeeded' : 'failed');
      } else if (job) {
        this.jobs.unbindRunner(job);
      }
    }
    r.jobId = null;
    r.online = false;
    if (exitCode === 0) {
      this.store.forgetRunner(r);
      this.store.log.debug('Runner deregistered itself on exit', { runnerId: r.id, name: r.name });
    }
    this.jobs.autoStart(r.scaleSetId);
  }
}
