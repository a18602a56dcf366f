import { randomBytes, randomUUID } from 'node:crypto';
import type { Logger } from '@aro/observability';
import type { GitHubAccounts, Tenant } from './accounts';
import { vssError } from './errors';
import { MessageQueue } from './message-queue';
import type {
  EnqueueJobOptions,
  JobResult,
  JobView,
  RunnerView,
  ScaleSetLabel,
  ScaleSetStatistics,
  ScaleSetView,
  SessionView,
  TimingOptions,
  TokenLifetimes,
} from './types';

/**
 * The Actions service's state: per tenant the runner groups, scale sets, runners (one registration
 * per JIT config), message sessions, and the jobs that flow through them. All protocol routes and
 * all admin operations go through this class, so what a test inspects is exactly what the wire saw.
 */

export const ZERO_TIME = '0001-01-01T00:00:00Z';

interface RunnerGroup {
  id: number;
  name: string;
  isDefault: boolean;
}

interface TenantState {
  tenant: Tenant;
  groups: Map<number, RunnerGroup>;
  nextGroupId: number;
}

interface ScaleSet {
  id: number;
  tenantId: string;
  name: string;
  runnerGroupId: number;
  labels: ScaleSetLabel[];
  runnerSetting: Record<string, unknown>;
  createdOn: string;
  maxCapacity: number | null;
}

interface Runner {
  id: number;
  name: string;
  tenantId: string;
  scaleSetId: number;
  online: boolean;
  jobId: string | null;
  /**
   * The job that started on it, once one has. Every runner registered through `generatejitconfig` is
   * ephemeral: the real service hands it one job and never another, even while it is still online
   * reporting that job's end, so a spent runner is never picked again.
   */
  ranJobId: string | null;
  workFolder: string;
  createdOn: string;
}

interface Session {
  id: string;
  tenantId: string;
  scaleSetId: number;
  ownerName: string;
  queueToken: string;
  queueTokenExpiresAt: number;
  lastActivity: number;
  queue: MessageQueue;
  closed: AbortController;
}

/** A job as the service keeps it: what JobView shows, plus the bookkeeping of offers and timers. */
interface Job extends JobView {
  offeredAt: number;
  acquiredAt: number;
  durationMs: number | null;
  autoComplete: NodeJS.Timeout | null;
}

export interface JitConfigPayload {
  runnerId: number;
  runnerName: string;
  runnerScaleSetId: number;
  tenantId: string;
  workFolder: string;
  simulatorUrl: string;
}

export interface SessionAuth {
  session: Session;
}

function labelNames(ss: ScaleSet): string[] {
  return ss.labels.map((l) => l.name.toLowerCase());
}

export class ActionsService {
  private readonly tenants = new Map<string, TenantState>();
  private readonly scaleSets = new Map<number, ScaleSet>();
  private readonly runners = new Map<number, Runner>();
  /**
   * Ids of registrations that existed and are gone (removed by a DELETE, by the runner itself on a
   * 0 exit, or with their scale set), with their tenant. A later DELETE of one answers 204 as the
   * real service does: upstream's RemoveRunner accepts only 204 and its finalizer would otherwise
   * never finish a runner that deregistered itself. Ids never issued still answer 404.
   */
  private readonly removedRunnerTenants = new Map<number, string>();
  private readonly sessions = new Map<string, Session>();
  private readonly jobs = new Map<string, Job>();
  private readonly jobsByRequestId = new Map<number, Job>();
  private nextScaleSetId = 1;
  private nextRunnerId = 1;
  private nextMessageId = 1;
  private nextRunnerRequestId = 1;
  private nextWorkflowRunId = 1000;

  constructor(
    private readonly accounts: GitHubAccounts,
    private readonly now: () => number,
    readonly timing: TimingOptions,
    readonly lifetimes: TokenLifetimes,
    private readonly origin: () => string,
    private readonly log: Logger,
  ) {}

  private iso(ms = this.now()): string {
    return new Date(ms).toISOString();
  }

  // ---- tenants and runner groups -------------------------------------------------------------

  addTenant(tenant: Tenant): void {
    this.tenants.set(tenant.id, {
      tenant,
      groups: new Map([[1, { id: 1, name: 'Default', isDefault: true }]]),
      nextGroupId: 2,
    });
  }

  private tenantState(tenantId: string): TenantState {
    const t = this.tenants.get(tenantId);
    if (!t) throw vssError(404, 'VssResourceNotFoundException', `Tenant ${tenantId} does not exist.`);
    return t;
  }

  hasTenant(tenantId: string): boolean {
    return this.tenants.has(tenantId);
  }

  createRunnerGroup(tenantId: string, name: string): number {
    const t = this.tenantState(tenantId);
    const existing = [...t.groups.values()].find((g) => g.name.toLowerCase() === name.toLowerCase());
    if (existing) return existing.id;
    const id = t.nextGroupId++;
    t.groups.set(id, { id, name, isDefault: false });
    return id;
  }

  runnerGroupsByName(tenantId: string, groupName: string | null): Array<Record<string, unknown>> {
    const t = this.tenantState(tenantId);
    return [...t.groups.values()]
      .filter((g) => groupName === null || g.name.toLowerCase() === groupName.toLowerCase())
      .map((g) => ({
        id: g.id,
        name: g.name,
        size: this.groupSize(g.id, tenantId),
        isDefaultGroup: g.isDefault,
      }));
  }

  private groupSize(groupId: number, tenantId: string): number {
    let n = 0;
    for (const r of this.runners.values()) {
      const ss = this.scaleSets.get(r.scaleSetId);
      if (r.tenantId === tenantId && ss?.runnerGroupId === groupId) n++;
    }
    return n;
  }

  // ---- scale sets ----------------------------------------------------------------------------

  private scaleSetIn(tenantId: string, id: number): ScaleSet {
    const ss = this.scaleSets.get(id);
    if (!ss || ss.tenantId !== tenantId) {
      throw vssError(
        404,
        'RunnerScaleSetNotFoundException',
        `No runner scale set found with identifier: ${id}.`,
      );
    }
    return ss;
  }

  scaleSetJson(ss: ScaleSet): Record<string, unknown> {
    const group = this.tenants.get(ss.tenantId)?.groups.get(ss.runnerGroupId);
    return {
      id: ss.id,
      name: ss.name,
      runnerGroupId: ss.runnerGroupId,
      runnerGroupName: group?.name ?? '',
      labels: ss.labels.map((l) => ({ ...l })),
      RunnerSetting: { ...ss.runnerSetting },
      createdOn: ss.createdOn,
      runnerJitConfigUrl: `${this.origin()}/tenant/${ss.tenantId}/_apis/runtime/runnerscalesets/${ss.id}/generatejitconfig`,
      statistics: this.statistics(ss.id),
    };
  }

  findScaleSets(
    tenantId: string,
    runnerGroupId: number | null,
    name: string | null,
  ): Array<Record<string, unknown>> {
    this.tenantState(tenantId);
    return [...this.scaleSets.values()]
      .filter(
        (ss) =>
          ss.tenantId === tenantId &&
          (runnerGroupId === null || ss.runnerGroupId === runnerGroupId) &&
          (name === null || ss.name.toLowerCase() === name.toLowerCase()),
      )
      .map((ss) => this.scaleSetJson(ss));
  }

  getScaleSet(tenantId: string, id: number): Record<string, unknown> {
    return this.scaleSetJson(this.scaleSetIn(tenantId, id));
  }

  createScaleSet(tenantId: string, body: Record<string, unknown>): Record<string, unknown> {
    const t = this.tenantState(tenantId);
    const name = typeof body.name === 'string' ? body.name.trim() : '';
    if (!name) throw vssError(400, 'ArgumentException', 'The runner scale set name must not be empty.');
    const groupId = typeof body.runnerGroupId === 'number' && body.runnerGroupId > 0 ? body.runnerGroupId : 1;
    if (!t.groups.has(groupId)) {
      throw vssError(
        404,
        'RunnerGroupNotFoundException',
        `No runner group found with identifier: ${groupId}.`,
      );
    }
    this.assertNameFree(tenantId, groupId, name, null);
    const ss: ScaleSet = {
      id: this.nextScaleSetId++,
      tenantId,
      name,
      runnerGroupId: groupId,
      labels: normaliseLabels(body.labels, name),
      runnerSetting: isRecord(body.RunnerSetting) ? { ...body.RunnerSetting } : {},
      createdOn: this.iso(),
      maxCapacity: null,
    };
    this.scaleSets.set(ss.id, ss);
    this.log.info('Created runner scale set', { tenantId, scaleSetId: ss.id, name });
    this.dispatchQueuedJobs();
    return this.scaleSetJson(ss);
  }

  private assertNameFree(tenantId: string, groupId: number, name: string, self: number | null): void {
    for (const other of this.scaleSets.values()) {
      if (
        other.tenantId === tenantId &&
        other.runnerGroupId === groupId &&
        other.id !== self &&
        other.name.toLowerCase() === name.toLowerCase()
      ) {
        throw vssError(
          409,
          'RunnerScaleSetExistsException',
          `A runner scale set with name '${name}' already exists in runner group ${groupId}.`,
        );
      }
    }
  }

  /** Partial update: absent and zero-valued fields leave the stored value as it is (Go omitempty senders). */
  updateScaleSet(tenantId: string, id: number, body: Record<string, unknown>): Record<string, unknown> {
    const ss = this.scaleSetIn(tenantId, id);
    const t = this.tenantState(tenantId);
    const name = typeof body.name === 'string' && body.name.trim() ? body.name.trim() : ss.name;
    const groupId =
      typeof body.runnerGroupId === 'number' && body.runnerGroupId > 0
        ? body.runnerGroupId
        : ss.runnerGroupId;
    if (!t.groups.has(groupId)) {
      throw vssError(
        404,
        'RunnerGroupNotFoundException',
        `No runner group found with identifier: ${groupId}.`,
      );
    }
    this.assertNameFree(tenantId, groupId, name, ss.id);
    ss.name = name;
    ss.runnerGroupId = groupId;
    if (Array.isArray(body.labels) && body.labels.length > 0) ss.labels = normaliseLabels(body.labels, name);
    if (isRecord(body.RunnerSetting)) ss.runnerSetting = { ...ss.runnerSetting, ...body.RunnerSetting };
    this.dispatchQueuedJobs();
    return this.scaleSetJson(ss);
  }

  /** Drops the scale set with its runners and sessions; its unfinished jobs go back to the queue. */
  deleteScaleSet(tenantId: string, id: number): void {
    const ss = this.scaleSetIn(tenantId, id);
    for (const session of [...this.sessions.values()])
      if (session.scaleSetId === id) this.closeSession(session);
    for (const job of this.jobs.values()) {
      if (job.scaleSetId !== id || job.state === 'completed') continue;
      if (job.state === 'running') {
        this.finishJob(job, 'canceled');
      } else {
        this.requeue(job);
      }
    }
    for (const r of [...this.runners.values()]) if (r.scaleSetId === id) this.forgetRunner(r);
    this.scaleSets.delete(ss.id);
    this.log.info('Deleted runner scale set', { tenantId, scaleSetId: id, name: ss.name });
    this.dispatchQueuedJobs();
  }

  statistics(scaleSetId: number): ScaleSetStatistics {
    const s: ScaleSetStatistics = {
      totalAvailableJobs: 0,
      totalAcquiredJobs: 0,
      totalAssignedJobs: 0,
      totalRunningJobs: 0,
      totalRegisteredRunners: 0,
      totalBusyRunners: 0,
      totalIdleRunners: 0,
    };
    for (const job of this.jobs.values()) {
      if (job.scaleSetId !== scaleSetId) continue;
      if (job.state === 'available') s.totalAvailableJobs++;
      if (job.state === 'acquired') s.totalAcquiredJobs++;
      if (job.state === 'running') s.totalRunningJobs++;
    }
    s.totalAssignedJobs = s.totalAcquiredJobs + s.totalRunningJobs;
    for (const r of this.runners.values()) {
      if (r.scaleSetId !== scaleSetId) continue;
      s.totalRegisteredRunners++;
      if (r.jobId) s.totalBusyRunners++;
      else if (r.online) s.totalIdleRunners++;
    }
    return s;
  }

  // ---- runners -------------------------------------------------------------------------------

  generateJitConfig(
    tenantId: string,
    scaleSetId: number,
    body: Record<string, unknown>,
  ): Record<string, unknown> {
    const ss = this.scaleSetIn(tenantId, scaleSetId);
    const name = typeof body.name === 'string' ? body.name.trim() : '';
    if (!name) throw vssError(400, 'ArgumentException', 'The runner name must not be empty.');
    const taken = this.runnerByName(tenantId, name);
    if (taken) {
      throw vssError(
        409,
        'TaskAgentExistsException',
        `A runner with the name '${name}' already exists (id ${taken.id}).`,
      );
    }
    const runner: Runner = {
      id: this.nextRunnerId++,
      name,
      tenantId,
      scaleSetId: ss.id,
      online: false,
      jobId: null,
      ranJobId: null,
      workFolder: typeof body.workFolder === 'string' ? body.workFolder : '',
      createdOn: this.iso(),
    };
    this.runners.set(runner.id, runner);
    const payload: JitConfigPayload = {
      runnerId: runner.id,
      runnerName: runner.name,
      runnerScaleSetId: ss.id,
      tenantId,
      workFolder: runner.workFolder,
      simulatorUrl: this.origin(),
    };
    this.log.debug('Registered runner from a JIT config', {
      tenantId,
      scaleSetId: ss.id,
      runnerId: runner.id,
      name,
    });
    return {
      runner: this.runnerReference(runner),
      encodedJITConfig: Buffer.from(JSON.stringify(payload), 'utf8').toString('base64'),
    };
  }

  private runnerReference(r: Runner): Record<string, unknown> {
    return {
      id: r.id,
      name: r.name,
      runnerScaleSetId: r.scaleSetId,
      status: r.online ? 'online' : 'offline',
    };
  }

  private runnerByName(tenantId: string, name: string): Runner | undefined {
    for (const r of this.runners.values()) {
      if (r.tenantId === tenantId && r.name.toLowerCase() === name.toLowerCase()) return r;
    }
    return undefined;
  }

  private runnerIn(tenantId: string, id: number): Runner {
    const r = this.runners.get(id);
    if (!r || r.tenantId !== tenantId) {
      throw vssError(404, 'TaskAgentNotFoundException', `No agent found in pool 0 with identifier ${id}.`);
    }
    return r;
  }

  getRunner(tenantId: string, id: number): Record<string, unknown> {
    return this.runnerReference(this.runnerIn(tenantId, id));
  }

  /** Every runner of the tenant when `name` is null (orphan sweeps), else the one with that name (0 or 1). */
  listRunners(tenantId: string, name: string | null): Array<Record<string, unknown>> {
    this.tenantState(tenantId);
    if (name !== null) {
      const r = this.runnerByName(tenantId, name);
      return r ? [this.runnerReference(r)] : [];
    }
    return [...this.runners.values()]
      .filter((r) => r.tenantId === tenantId)
      .map((r) => this.runnerReference(r));
  }

  /** Drops a registration and remembers that it existed (see `removedRunnerTenants`). */
  private forgetRunner(r: Runner): void {
    this.runners.delete(r.id);
    this.removedRunnerTenants.set(r.id, r.tenantId);
  }

  removeRunner(tenantId: string, id: number): void {
    if (!this.runners.has(id) && this.removedRunnerTenants.get(id) === tenantId) {
      this.log.debug('Runner registration already removed', { tenantId, runnerId: id });
      return;
    }
    const r = this.runnerIn(tenantId, id);
    if (r.jobId) {
      throw vssError(
        400,
        'TaskAgentJobStillRunningException',
        `The runner '${r.name}' (id ${r.id}) cannot be removed while job ${r.jobId} is assigned to it.`,
      );
    }
    this.forgetRunner(r);
    this.log.debug('Removed runner registration', { tenantId, runnerId: r.id, name: r.name });
  }

  // ---- sessions and messages -----------------------------------------------------------------

  private sessionLive(s: Session): boolean {
    if (s.queue.pollers > 0) return true;
    const idle = this.timing.sessionIdleTimeoutMs;
    return idle <= 0 || this.now() - s.lastActivity < idle;
  }

  sessionJson(s: Session): Record<string, unknown> {
    const ss = this.scaleSets.get(s.scaleSetId);
    return {
      sessionId: s.id,
      ownerName: s.ownerName,
      runnerScaleSet: ss ? this.scaleSetJson(ss) : null,
      messageQueueUrl: this.queueUrl(s),
      messageQueueAccessToken: s.queueToken,
      statistics: this.statistics(s.scaleSetId),
    };
  }

  private queueUrl(s: Session): string {
    return `${this.origin()}/tenant/${s.tenantId}/_apis/runtime/runnerscalesets/${s.scaleSetId}/messages?sessionId=${s.id}`;
  }

  createSession(
    tenantId: string,
    scaleSetId: number,
    body: Record<string, unknown>,
  ): Record<string, unknown> {
    const ss = this.scaleSetIn(tenantId, scaleSetId);
    const ownerName = typeof body.ownerName === 'string' ? body.ownerName : '';
    for (const other of [...this.sessions.values()]) {
      if (other.scaleSetId !== ss.id) continue;
      if (this.sessionLive(other)) {
        throw vssError(
          409,
          'TaskAgentSessionConflictException',
          `The scale set ${ss.name} already has an active session for owner ${other.ownerName}.`,
        );
      }
      this.log.info('Taking over an idle message session', { scaleSetId: ss.id, sessionId: other.id });
      this.closeSession(other);
    }
    const session: Session = {
      id: randomUUID(),
      tenantId,
      scaleSetId: ss.id,
      ownerName,
      queueToken: '',
      queueTokenExpiresAt: 0,
      lastActivity: this.now(),
      queue: new MessageQueue(() => this.nextMessageId++),
      closed: new AbortController(),
    };
    this.rotateQueueToken(session);
    this.sessions.set(session.id, session);
    this.log.info('Created message session', {
      tenantId,
      scaleSetId: ss.id,
      sessionId: session.id,
      ownerName,
    });
    // Jobs that were offered while no listener was connected are offered again to the new one.
    for (const job of this.jobs.values()) {
      if (job.scaleSetId === ss.id && job.state === 'available') this.offer(job);
    }
    this.dispatchQueuedJobs();
    return this.sessionJson(session);
  }

  private rotateQueueToken(s: Session): void {
    s.queueToken = randomBytes(24).toString('base64url');
    s.queueTokenExpiresAt = this.now() + this.lifetimes.queueTokenSeconds * 1000;
  }

  private sessionIn(tenantId: string, scaleSetId: number, sessionId: string): Session {
    const s = this.sessions.get(sessionId);
    if (!s || s.tenantId !== tenantId || s.scaleSetId !== scaleSetId) {
      throw vssError(
        400,
        'TaskAgentSessionExpiredException',
        `The session ${sessionId} has expired or was deleted.`,
      );
    }
    return s;
  }

  refreshSession(tenantId: string, scaleSetId: number, sessionId: string): Record<string, unknown> {
    const s = this.sessionIn(tenantId, scaleSetId, sessionId);
    this.rotateQueueToken(s);
    s.lastActivity = this.now();
    return this.sessionJson(s);
  }

  deleteSession(tenantId: string, scaleSetId: number, sessionId: string): void {
    this.closeSession(this.sessionIn(tenantId, scaleSetId, sessionId));
  }

  private closeSession(s: Session): void {
    this.sessions.delete(s.id);
    s.closed.abort();
    this.log.info('Closed message session', { scaleSetId: s.scaleSetId, sessionId: s.id });
  }

  /** The session a queue token opens for this scale set; 401 when unknown, rotated, or expired. */
  authenticateQueue(tenantId: string, scaleSetId: number, token: string | null): Session {
    if (token) {
      for (const s of this.sessions.values()) {
        if (s.queueToken !== token) continue;
        if (s.tenantId === tenantId && s.scaleSetId === scaleSetId && s.queueTokenExpiresAt > this.now())
          return s;
        break;
      }
    }
    throw vssError(
      401,
      'VssUnauthorizedException',
      'The message queue access token is not valid or has expired.',
    );
  }

  /**
   * Long poll: acknowledge through `lastMessageId`, then answer the oldest pending message, or wait
   * for one until the poll timeout (null = 202).
   */
  async getMessage(
    session: Session,
    lastMessageId: number,
    maxCapacity: number | null,
    abort: AbortSignal,
  ): Promise<Record<string, unknown> | null> {
    session.lastActivity = this.now();
    if (maxCapacity !== null) {
      const ss = this.scaleSets.get(session.scaleSetId);
      if (ss) ss.maxCapacity = maxCapacity;
    }
    if (lastMessageId > 0) session.queue.acknowledgeThrough(lastMessageId);
    const signal = AbortSignal.any([abort, session.closed.signal]);
    const hasMessage = await session.queue.waitForMessage(this.timing.longPollTimeoutMs, signal);
    session.lastActivity = this.now();
    if (!hasMessage || session.closed.signal.aborted) return null;
    const message = session.queue.take();
    if (!message) return null;
    return {
      messageId: message.id,
      messageType: 'RunnerScaleSetJobMessages',
      body: JSON.stringify(message.items),
      statistics: this.statistics(session.scaleSetId),
    };
  }

  deleteMessage(session: Session, messageId: number): void {
    session.lastActivity = this.now();
    session.queue.delete(messageId);
  }

  private liveSessionOf(scaleSetId: number): Session | undefined {
    for (const s of this.sessions.values()) if (s.scaleSetId === scaleSetId) return s;
    return undefined;
  }

  private emit(scaleSetId: number, item: Record<string, unknown>): void {
    this.liveSessionOf(scaleSetId)?.queue.push(item);
  }

  // ---- jobs ----------------------------------------------------------------------------------

  private jobMessage(job: Job, messageType: string): Record<string, unknown> {
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

  enqueueJob(opts: EnqueueJobOptions): JobView {
    let repo = opts.repo;
    let labels = opts.labels;
    if (opts.scaleSetId !== undefined) {
      const ss = this.scaleSets.get(opts.scaleSetId);
      if (!ss) throw new Error(`cannot enqueue a job for scale set ${opts.scaleSetId}: no such scale set`);
      labels = labels ?? [ss.name];
      repo = repo ?? this.defaultRepoFor(ss);
    }
    if (!repo) throw new Error('a job needs a repo (owner/name) or a scaleSetId');
    if (!labels || labels.length === 0) throw new Error('a job needs labels or a scaleSetId');
    const [owner, name] = repo.split('/');
    const job: Job = {
      jobId: randomUUID(),
      runnerRequestId: this.nextRunnerRequestId++,
      state: 'queued',
      labels: [...labels],
      repo,
      workflowRef: opts.workflowRef ?? `${owner}/${name}/.github/workflows/ci.yml@refs/heads/main`,
      displayName: opts.displayName ?? 'build',
      eventName: opts.eventName ?? 'push',
      workflowRunId: this.nextWorkflowRunId++,
      scaleSetId: opts.scaleSetId ?? null,
      runnerId: null,
      runnerName: null,
      result: null,
      startAttempts: 0,
      queueTime: this.iso(),
      scaleSetAssignTime: ZERO_TIME,
      runnerAssignTime: ZERO_TIME,
      finishTime: ZERO_TIME,
      offeredAt: 0,
      acquiredAt: 0,
      durationMs: opts.durationMs ?? null,
      autoComplete: null,
    };
    this.jobs.set(job.jobId, job);
    this.jobsByRequestId.set(job.runnerRequestId, job);
    this.log.info('Queued job', {
      jobId: job.jobId,
      runnerRequestId: job.runnerRequestId,
      labels: job.labels,
      repo,
    });
    this.dispatchQueuedJobs();
    return this.jobView(job);
  }

  private defaultRepoFor(ss: ScaleSet): string {
    const owner = this.tenants.get(ss.tenantId)?.tenant.owner;
    if (owner && !('enterprise' in owner)) {
      if (owner.repo) return `${owner.org}/${owner.repo}`;
      return (
        this.accounts.listRepos().find((r) => r.toLowerCase().startsWith(`${owner.org.toLowerCase()}/`)) ??
        `${owner.org}/repo`
      );
    }
    return this.accounts.listRepos()[0] ?? 'octo/hello';
  }

  /** Offers every queued job to the first matching scale set that has a listener (repo, then org, then enterprise). */
  private dispatchQueuedJobs(): void {
    for (const job of this.jobs.values()) {
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
      !!this.liveSessionOf(ss.id) && wanted.every((l) => labelNames(ss).includes(l));
    if (job.scaleSetId !== null) {
      const ss = this.scaleSets.get(job.scaleSetId);
      return ss && fits(ss) ? ss : undefined;
    }
    for (const tenant of this.accounts.tenantsForRepo(job.repo)) {
      const candidates = [...this.scaleSets.values()]
        .filter((ss) => ss.tenantId === tenant.id)
        .sort((a, b) => a.id - b.id);
      const hit = candidates.find(fits);
      if (hit) return hit;
    }
    return undefined;
  }

  private offer(job: Job): void {
    if (job.scaleSetId === null) return;
    job.offeredAt = this.now();
    const ss = this.scaleSets.get(job.scaleSetId);
    this.emit(job.scaleSetId, {
      ...this.jobMessage(job, 'JobAvailable'),
      acquireJobUrl: ss
        ? `${this.origin()}/tenant/${ss.tenantId}/_apis/runtime/runnerscalesets/${ss.id}/acquirejob`
        : '',
    });
  }

  private requeue(job: Job): void {
    this.unbindRunner(job);
    if (job.autoComplete) clearTimeout(job.autoComplete);
    job.autoComplete = null;
    job.state = 'queued';
    job.scaleSetId = null;
    job.scaleSetAssignTime = ZERO_TIME;
    job.runnerAssignTime = ZERO_TIME;
  }

  private unbindRunner(job: Job): void {
    if (job.runnerId !== null) {
      const r = this.runners.get(job.runnerId);
      if (r && r.jobId === job.jobId) r.jobId = null;
    }
    job.runnerId = null;
    job.runnerName = null;
  }

  private assignedCount(scaleSetId: number): number {
    let n = 0;
    for (const job of this.jobs.values()) {
      if (job.scaleSetId === scaleSetId && (job.state === 'acquired' || job.state === 'running')) n++;
    }
    return n;
  }

  /** `acquirejobs`: the subset of `ids` still available to this scale set, within the listener's max capacity. */
  acquireJobs(session: Session, ids: number[]): number[] {
    session.lastActivity = this.now();
    const ss = this.scaleSets.get(session.scaleSetId);
    if (!ss) return [];
    const acquired: number[] = [];
    for (const id of ids) {
      const job = this.jobsByRequestId.get(id);
      if (!job || job.state !== 'available' || job.scaleSetId !== ss.id) continue;
      if (ss.maxCapacity !== null && this.assignedCount(ss.id) >= ss.maxCapacity) break;
      job.state = 'acquired';
      job.acquiredAt = this.now();
      job.scaleSetAssignTime = this.iso();
      acquired.push(id);
      this.emit(ss.id, this.jobMessage(job, 'JobAssigned'));
    }
    this.autoStart(ss.id);
    return acquired;
  }

  acquirableJobs(tenantId: string, scaleSetId: number): Array<Record<string, unknown>> {
    const ss = this.scaleSetIn(tenantId, scaleSetId);
    return [...this.jobs.values()]
      .filter((j) => j.scaleSetId === ss.id && j.state === 'available')
      .map((j) => ({
        ...this.jobMessage(j, 'JobAvailable'),
        acquireJobUrl: `${this.origin()}/tenant/${tenantId}/_apis/runtime/runnerscalesets/${ss.id}/acquirejob`,
      }));
  }

  /** Acquired jobs go to idle online runners of the scale set, oldest job first. */
  private autoStart(scaleSetId: number): void {
    if (!this.timing.autoStartJobs) return;
    const waiting = [...this.jobs.values()]
      .filter((j) => j.scaleSetId === scaleSetId && j.state === 'acquired' && j.runnerId === null)
      .sort((a, b) => a.runnerRequestId - b.runnerRequestId);
    for (const job of waiting) {
      const runner = [...this.runners.values()].find(
        (r) => r.scaleSetId === scaleSetId && r.online && !r.jobId && r.ranJobId === null,
      );
      if (!runner) return;
      this.bind(job, runner);
      this.start(job);
    }
  }

  private bind(job: Job, runner: Runner): void {
    if (job.state === 'available' || job.state === 'queued') {
      job.scaleSetId = runner.scaleSetId;
      job.state = 'acquired';
      job.acquiredAt = this.now();
      job.scaleSetAssignTime = this.iso();
      this.emit(runner.scaleSetId, this.jobMessage(job, 'JobAssigned'));
    }
    runner.jobId = job.jobId;
    runner.online = true;
    job.runnerId = runner.id;
    job.runnerName = runner.name;
  }

  private start(job: Job): void {
    if (job.runnerId === null || job.scaleSetId === null) return;
    job.state = 'running';
    job.startAttempts++;
    const runner = this.runners.get(job.runnerId);
    if (runner) runner.ranJobId = job.jobId;
    job.runnerAssignTime = this.iso();
    this.emit(job.scaleSetId, {
      ...this.jobMessage(job, 'JobStarted'),
      runnerId: job.runnerId,
      runnerName: job.runnerName ?? '',
    });
    if (job.durationMs !== null) {
      job.autoComplete = setTimeout(() => {
        job.autoComplete = null;
        if (job.state === 'running') this.finishJob(job, 'succeeded');
      }, job.durationMs);
      job.autoComplete.unref();
    }
  }

  private finishJob(job: Job, result: JobResult): void {
    if (job.autoComplete) clearTimeout(job.autoComplete);
    job.autoComplete = null;
    const scaleSetId = job.scaleSetId;
    job.state = 'completed';
    job.result = result;
    job.finishTime = this.iso();
    const runnerId = job.runnerId;
    const runnerName = job.runnerName;
    if (runnerId !== null) {
      const r = this.runners.get(runnerId);
      if (r && r.jobId === job.jobId) r.jobId = null;
    }
    this.log.info('Job completed', { jobId: job.jobId, result, runnerName });
    if (scaleSetId !== null) {
      this.emit(scaleSetId, {
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
    const ss = this.scaleSets.get(scaleSetId);
    if (!ss || ss.maxCapacity === null) return;
    for (const job of this.jobs.values()) {
      if (job.scaleSetId === scaleSetId && job.state === 'available') this.offer(job);
    }
  }

  // ---- runner simulation (admin) -------------------------------------------------------------

  private runnerNamed(runnerName: string): Runner {
    const matches = [...this.runners.values()].filter(
      (r) => r.name.toLowerCase() === runnerName.toLowerCase(),
    );
    if (matches.length === 0) throw new Error(`no runner registered with name "${runnerName}"`);
    if (matches.length > 1) throw new Error(`runner name "${runnerName}" is registered in several tenants`);
    return matches[0];
  }

  runnerConnected(runnerName: string): RunnerView {
    const r = this.runnerNamed(runnerName);
    r.online = true;
    this.autoStart(r.scaleSetId);
    return this.runnerView(r);
  }

  /**
   * Binds a job to a runner without starting it. `job` picks it: a job id, options for a new job on
   * the runner's scale set, or (absent) the oldest acquired-and-unbound, else the oldest offered job of
   * the scale set, else a new one.
   */
  assignJobToRunner(runnerName: string, job?: string | EnqueueJobOptions): JobView {
    const r = this.runnerNamed(runnerName);
    if (r.jobId) throw new Error(`runner "${runnerName}" already holds job ${r.jobId}`);
    this.refuseSpent(r);
    const target = this.pickJob(r, job);
    this.bind(target, r);
    return this.jobView(target);
  }

  startJob(runnerName: string, job?: string | EnqueueJobOptions): JobView {
    const r = this.runnerNamed(runnerName);
    let target: Job;
    if (r.jobId && (job === undefined || job === r.jobId)) {
      target = this.jobs.get(r.jobId) as Job;
    } else {
      if (r.jobId) throw new Error(`runner "${runnerName}" already holds job ${r.jobId}`);
      this.refuseSpent(r);
      target = this.pickJob(r, job);
      this.bind(target, r);
    }
    if (target.state !== 'running') this.start(target);
    return this.jobView(target);
  }

  /** An ephemeral runner that has run its job takes no other, as on the real service. */
  private refuseSpent(r: Runner): void {
    if (r.ranJobId !== null) {
      throw new Error(`runner "${r.name}" is ephemeral and already ran job ${r.ranJobId}`);
    }
  }

  private pickJob(r: Runner, job?: string | EnqueueJobOptions): Job {
    if (typeof job === 'string') {
      const j = this.jobs.get(job);
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
      const mine = [...this.jobs.values()]
        .filter((j) => j.scaleSetId === r.scaleSetId && j.runnerId === null)
        .sort((a, b) => a.runnerRequestId - b.runnerRequestId);
      const existing = mine.find((j) => j.state === 'acquired') ?? mine.find((j) => j.state === 'available');
      if (existing) return existing;
    }
    const created = this.enqueueJob({ ...(job ?? {}), scaleSetId: r.scaleSetId });
    return this.jobs.get(created.jobId) as Job;
  }

  completeJob(jobId: string, result: JobResult): JobView {
    const job = this.jobs.get(jobId);
    if (!job) throw new Error(`no job with id ${jobId}`);
    if (job.state === 'completed') throw new Error(`job ${jobId} already completed (${job.result})`);
    this.finishJob(job, result);
    return this.jobView(job);
  }

  /**
   * The runner process ended. A job it was running fails (or succeeds on exit 0); one bound but not
   * started goes back to the scale set. On exit 0 the ephemeral runner removes its own registration;
   * otherwise the registration stays, offline, for the controller to remove.
   */
  runnerExited(runnerName: string, exitCode: number): void {
    const r = this.runnerNamed(runnerName);
    if (r.jobId) {
      const job = this.jobs.get(r.jobId);
      if (job?.state === 'running') {
        this.finishJob(job, exitCode === 0 ? 'succeeded' : 'failed');
      } else if (job) {
        this.unbindRunner(job);
      }
    }
    r.jobId = null;
    r.online = false;
    if (exitCode === 0) {
      this.forgetRunner(r);
      this.log.debug('Runner deregistered itself on exit', { runnerId: r.id, name: r.name });
    }
    this.autoStart(r.scaleSetId);
  }

  // ---- timeouts ------------------------------------------------------------------------------

  /** Re-offers unacquired jobs and cancels acquired jobs no runner started, per `timing`. */
  checkTimeouts(): void {
    const now = this.now();
    const { jobReofferMs, jobStartTimeoutMs, maxJobStartAttempts } = this.timing;
    for (const job of this.jobs.values()) {
      if (job.state === 'available' && jobReofferMs > 0 && now - job.offeredAt >= jobReofferMs) {
        this.offer(job);
      } else if (
        job.state === 'acquired' &&
        jobStartTimeoutMs > 0 &&
        now - job.acquiredAt >= jobStartTimeoutMs
      ) {
        const scaleSetId = job.scaleSetId;
        job.startAttempts++;
        if (scaleSetId !== null) {
          this.emit(scaleSetId, {
            ...this.jobMessage(job, 'JobCompleted'),
            result: 'canceled',
            runnerId: 0,
            runnerName: '',
          });
        }
        if (job.startAttempts >= maxJobStartAttempts) {
          this.unbindRunner(job);
          job.state = 'completed';
          job.result = 'canceled';
          job.finishTime = this.iso();
        } else {
          this.requeue(job);
        }
      }
    }
    this.dispatchQueuedJobs();
  }

  // ---- inspection ----------------------------------------------------------------------------

  jobView(j: Job): JobView {
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

  runnerView(r: Runner): RunnerView {
    return {
      id: r.id,
      name: r.name,
      tenantId: r.tenantId,
      scaleSetId: r.scaleSetId,
      status: r.jobId ? 'busy' : r.online ? 'idle' : 'offline',
      jobId: r.jobId,
      createdOn: r.createdOn,
    };
  }

  listJobs(): JobView[] {
    return [...this.jobs.values()].map((j) => this.jobView(j));
  }

  listRunnerViews(): RunnerView[] {
    return [...this.runners.values()].map((r) => this.runnerView(r));
  }

  listSessionViews(): SessionView[] {
    return [...this.sessions.values()].map((s) => ({
      sessionId: s.id,
      ownerName: s.ownerName,
      tenantId: s.tenantId,
      scaleSetId: s.scaleSetId,
      messageQueueUrl: this.queueUrl(s),
      acknowledgedMessageId: s.queue.acknowledgedId,
      pendingMessages: s.queue.pending,
      maxCapacity: this.scaleSets.get(s.scaleSetId)?.maxCapacity ?? null,
    }));
  }

  listScaleSetViews(): ScaleSetView[] {
    return [...this.scaleSets.values()].map((ss) => ({
      id: ss.id,
      name: ss.name,
      tenantId: ss.tenantId,
      runnerGroupId: ss.runnerGroupId,
      runnerGroupName: this.tenants.get(ss.tenantId)?.groups.get(ss.runnerGroupId)?.name ?? '',
      labels: ss.labels.map((l) => ({ ...l })),
      runnerSetting: { ...ss.runnerSetting },
      createdOn: ss.createdOn,
      statistics: this.statistics(ss.id),
    }));
  }

  /** Makes every queue token invalid (the next poll answers 401 until the session is refreshed). */
  expireQueueTokens(): void {
    for (const s of this.sessions.values()) s.queueTokenExpiresAt = 0;
  }

  /** Ends open long polls and auto-complete timers (simulator stop). */
  shutdown(): void {
    for (const s of this.sessions.values()) s.closed.abort();
    for (const j of this.jobs.values()) if (j.autoComplete) clearTimeout(j.autoComplete);
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** At least one label (the scale set's name), and an empty label type becomes "System", as the client library does. */
function normaliseLabels(raw: unknown, name: string): ScaleSetLabel[] {
  const labels: ScaleSetLabel[] = [];
  if (Array.isArray(raw)) {
    for (const l of raw) {
      if (!isRecord(l) || typeof l.name !== 'string' || !l.name) continue;
      labels.push({ type: typeof l.type === 'string' && l.type ? l.type : 'System', name: l.name });
    }
  }
  return labels.length > 0 ? labels : [{ type: 'System', name }];
}
