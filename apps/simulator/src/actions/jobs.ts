import { randomUUID } from 'node:crypto';
import type { EnqueueJobOptions, JobResult, JobView } from '../types';
import { type Job, type Runner, type ScaleSet, type Session, ZERO_TIME } from './model';
import type { ActionsStore } from './store';

/**
 * Jobs from queued to completed: matched to a scale set with a listener, offered, acquired by the
 * listener within its max capacity, bound to a runner and started, finished. Each step tells the scale
 * set's listener in a message, as the real service does.
 */
export class Jobs {
  constructor(private readonly store: ActionsStore) {}

  jobMessage(job: Job, messageType: string): Record<string, unknown> {
    const [owner, repo] = job.repo.split('/');
    return {
      messageType,
      runnerRequestId: job.runnerRequestId,
      repositoryName: repo ?? '',
      ownerName: owner ?? '',
      jobId: job.jobId,
      jobWorkflowRef: job.workflowRef,
      jobDisplayName: job.displayName,
      workflowRunId: job.workflowRunId,
      eventName: job.eventName,
      requestLabels: [...job.labels],
      queueTime: job.queueTime,
      scaleSetAssignTime: job.scaleSetAssignTime,
      runnerAssignTime: job.runnerAssignTime,
      finishTime: job.finishTime,
    };
  }

  enqueue(opts: EnqueueJobOptions): JobView {
    let repo = opts.repo;
    let labels = opts.labels;
    if (opts.scaleSetId !== undefined) {
      const ss = this.store.scaleSets.get(opts.scaleSetId);
      if (!ss) throw new Error(`cannot enqueue a job for scale set ${opts.scaleSetId}: no such scale set`);
      labels = labels ?? [ss.name];
      repo = repo ?? this.defaultRepoFor(ss);
    }
    if (!repo) throw new Error('a job needs a repo (owner/name) or a scaleSetId');
    if (!labels || labels.length === 0) throw new Error('a job needs labels or a scaleSetId');
    const [owner, name] = repo.split('/');
    const job: Job = {
      jobId: randomUUID(),
      runnerRequestId: this.store.nextRunnerRequestId++,
      state: 'queued',
      labels: [...labels],
      repo,
      workflowRef: opts.workflowRef ?? `${owner}/${name}/.github/workflows/ci.yml@refs/heads/main`,
      displayName: opts.displayName ?? 'build',
      eventName: opts.eventName ?? 'push',
      workflowRunId: this.store.nextWorkflowRunId++,
      scaleSetId: opts.scaleSetId ?? null,
      runnerId: null,
      runnerName: null,
      result: null,
      startAttempts: 0,
      queueTime: this.store.iso(),
      scaleSetAssignTime: ZERO_TIME,
      runnerAssignTime: ZERO_TIME,
      finishTime: ZERO_TIME,
      offeredAt: 0,
      acquiredAt: 0,
      durationMs: opts.durationMs ?? null,
      autoComplete: null,
    };
    this.store.jobs.set(job.jobId, job);
    this.store.jobsByRequestId.set(job.runnerRequestId, job);
    this.store.log.info('Queued job', {
      jobId: job.jobId,
      runnerRequestId: job.runnerRequestId,
      labels: job.labels,
      repo,
    });
    this.dispatchQueuedJobs();
    return jobView(job);
  }

  private defaultRepoFor(ss: ScaleSet): string {
    const { accounts } = this.store;
    const owner = this.store.tenants.get(ss.tenantId)?.tenant.owner;
    if (owner && !('enterprise' in owner)) {
      if (owner.repo) return `${owner.org}/${owner.repo}`;
      return (
        accounts.listRepos().find((r) => r.toLowerCase().startsWith(`${owner.org.toLowerCase()}/`)) ??
        `${owner.org}/repo`
      );
    }
    return accounts.listRepos()[0] ?? 'octo/hello';
  }

  /** Offers every queued job to the first matching scale set that has a listener (repo, then org, then enterprise). */
  dispatchQueuedJobs(): void {
    for (const job of this.store.jobs.values()) {
      if (job.state !== 'queued') continue;
      const target = this.matchScaleSet(job);
      if (!target) continue;
      job.scaleSetId = target.id;
      job.state = 'available';
      this.offer(job);
    }
  }

  private matchScaleSet(job: Job): ScaleSet | undefined {
    const wanted = job.labels.map((l) => l.toLowerCase());
    const fits = (ss: ScaleSet): boolean =>
      !!this.store.liveSessionOf(ss.id) && wanted.every((l) => labelNames(ss).includes(l));
    if (job.scaleSetId !== null) {
      const ss = this.store.scaleSets.get(job.scaleSetId);
      return ss && fits(ss) ? ss : undefined;
    }
    for (const tenant of this.store.accounts.tenantsForRepo(job.repo)) {
      const candidates = [...this.store.scaleSets.values()]
        .filter((ss) => ss.tenantId === tenant.id)
        .sort((a, b) => a.id - b.id);
      const hit = candidates.find(fits);
      if (hit) return hit;
    }
    return undefined;
  }

  /** `JobAvailable` with the URL its listener acquires it through. */
  private availableMessage(job: Job, ss: ScaleSet | undefined): Record<string, unknown> {
    return {
      ...this.jobMessage(job, 'JobAvailable'),
      acquireJobUrl: ss ? `${this.store.scaleSetUrl(ss.tenantId, ss.id)}/acquirejob` : '',
    };
  }

  offer(job: Job): void {
    if (job.scaleSetId === null) return;
    job.offeredAt = this.store.now();
    this.store.emit(job.scaleSetId, this.availableMessage(job, this.store.scaleSets.get(job.scaleSetId)));
  }

  requeue(job: Job): void {
    this.unbindRunner(job);
    if (job.autoComplete) clearTimeout(job.autoComplete);
    job.autoComplete = null;
    job.state = 'queued';
    job.scaleSetId = null;
    job.scaleSetAssignTime = ZERO_TIME;
    job.runnerAssignTime = ZERO_TIME;
  }

  unbindRunner(job: Job): void {
    if (job.runnerId !== null) {
      const r = this.store.runners.get(job.runnerId);
      if (r && r.jobId === job.jobId) r.jobId = null;
    }
    job.runnerId = null;
    job.runnerName = null;
  }

  private assignedCount(scaleSetId: number): number {
    let n = 0;
    for (const job of this.store.jobs.values()) {
      if (job.scaleSetId === scaleSetId && (job.state === 'acquired' || job.state === 'running')) n++;
    }
    return n;
  }

  /** `acquirejobs`: the subset of `ids` still available to this scale set, within the listener's max capacity. */
  acquire(session: Session, ids: number[]): number[] {
    session.lastActivity = this.store.now();
    const ss = this.store.scaleSets.get(session.scaleSetId);
    if (!ss) return [];
    const acquired: number[] = [];
    for (const id of ids) {
      const job = this.store.jobsByRequestId.get(id);
      if (!job || job.state !== 'available' || job.scaleSetId !== ss.id) continue;
      if (ss.maxCapacity !== null && this.assignedCount(ss.id) >= ss.maxCapacity) break;
      job.state = 'acquired';
      job.acquiredAt = this.store.now();
      job.scaleSetAssignTime = this.store.iso();
      acquired.push(id);
      this.store.emit(ss.id, this.jobMessage(job, 'JobAssigned'));
    }
    this.autoStart(ss.id);
    return acquired;
  }

  acquirable(tenantId: string, scaleSetId: number): Array<Record<string, unknown>> {
    const ss = this.store.scaleSetIn(tenantId, scaleSetId);
    return [...this.store.jobs.values()]
      .filter((j) => j.scaleSetId === ss.id && j.state === 'available')
      .map((j) => this.availableMessage(j, ss));
  }

  /** Acquired jobs go to idle online runners of the scale set, oldest job first. */
  autoStart(scaleSetId: number): void {
    if (!this.store.timing.autoStartJobs) return;
    const waiting = [...this.store.jobs.values()]
      .filter((j) => j.scaleSetId === scaleSetId && j.state === 'acquired' && j.runnerId === null)
      .sort((a, b) => a.runnerRequestId - b.runnerRequestId);
    for (const job of waiting) {
      const runner = [...this.store.runners.values()].find(
        (r) => r.scaleSetId === scaleSetId && r.online && !r.jobId && r.ranJobId === null,
      );
      if (!runner) return;
      this.bind(job, runner);
      this.start(job);
    }
  }

  bind(job: Job, runner: Runner): void {
    if (job.state === 'available' || job.state === 'queued') {
      job.scaleSetId = runner.scaleSetId;
      job.state = 'acquired';
      job.acquiredAt = this.store.now();
      job.scaleSetAssignTime = this.store.iso();
      this.store.emit(runner.scaleSetId, this.jobMessage(job, 'JobAssigned'));
    }
    runner.jobId = job.jobId;
    runner.online = true;
    job.runnerId = runner.id;
    job.runnerName = runner.name;
  }

  start(job: Job): void {
    if (job.runnerId === null || job.scaleSetId === null) return;
    job.state = 'running';
    job.startAttempts++;
    const runner = this.store.runners.get(job.runnerId);
    if (runner) runner.ranJobId = job.jobId;
    job.runnerAssignTime = this.store.iso();
    this.store.emit(job.scaleSetId, {
      ...this.jobMessage(job, 'JobStarted'),
      runnerId: job.runnerId,
      runnerName: job.runnerName ?? '',
    });
    if (job.durationMs !== null) {
      job.autoComplete = setTimeout(() => {
        job.autoComplete = null;
        if (job.state === 'running') this.finish(job, 'succeeded');
      }, job.durationMs);
      job.autoComplete.unref();
    }
  }

  finish(job: Job, result: JobResult): void {
    if (job.autoComplete) clearTimeout(job.autoComplete);
    job.autoComplete = null;
    const scaleSetId = job.scaleSetId;
    job.state = 'completed';
    job.result = result;
    job.finishTime = this.store.iso();
    const runnerId = job.runnerId;
    const runnerName = job.runnerName;
    if (runnerId !== null) {
      const r = this.store.runners.get(runnerId);
      if (r && r.jobId === job.jobId) r.jobId = null;
    }
    this.store.log.info('Job completed', { jobId: job.jobId, result, runnerName });
    if (scaleSetId !== null) {
      this.store.emit(scaleSetId, {
        ...this.jobMessage(job, 'JobCompleted'),
        result,
        runnerId: runnerId ?? 0,
        runnerName: runnerName ?? '',
      });
      this.reofferWithinCapacity(scaleSetId);
    }
  }

  /** A freed slot lets the listener acquire a job it had to leave while at max capacity. */
  private reofferWithinCapacity(scaleSetId: number): void {
    const ss = this.store.scaleSets.get(scaleSetId);
    if (!ss || ss.maxCapacity === null) return;
    for (const job of this.store.jobs.values()) {
      if (job.scaleSetId === scaleSetId && job.state === 'available') this.offer(job);
    }
  }

  views(): JobView[] {
    return [...this.store.jobs.values()].map(jobView);
  }

  /** Stops the auto-complete timers (simulator stop). */
  clearTimers(): void {
    for (const j of this.store.jobs.values()) if (j.autoComplete) clearTimeout(j.autoComplete);
  }
}

function labelNames(ss: ScaleSet): string[] {
  return ss.labels.map((l) => l.name.toLowerCase());
}

/** The job as the admin API shows it: the service's record without its timers. */
export function jobView(j: Job): JobView {
  return {
    jobId: j.jobId,
    runnerRequestId: j.runnerRequestId,
    state: j.state,
    labels: [...j.labels],
    repo: j.repo,
    workflowRef: j.workflowRef,
    displayName: j.displayName,
    eventName: j.eventName,
    workflowRunId: j.workflowRunId,
    scaleSetId: j.scaleSetId,
    runnerId: j.runnerId,
    runnerName: j.runnerName,
    result: j.result,
    startAttempts: j.startAttempts,
    queueTime: j.queueTime,
    scaleSetAssignTime: j.scaleSetAssignTime,
    runnerAssignTime: j.runnerAssignTime,
    finishTime: j.finishTime,
  };
}
