import type { Logger } from '@aro/observability';
import type { GitHubAccounts } from '../accounts';
import { vssError } from '../errors';
import type { ScaleSetStatistics, TimingOptions, TokenLifetimes } from '../types';
import type { Job, Runner, ScaleSet, Session, TenantState } from './model';

/**
 * The Actions service's state: per tenant the runner groups, scale sets, runners (one registration
 * per JIT config), message sessions, and the jobs that flow through them. Every part of the service
 * reads and writes this one store, so what a test inspects is exactly what the wire saw.
 */
export class ActionsStore {
  readonly tenants = new Map<string, TenantState>();
  readonly scaleSets = new Map<number, ScaleSet>();
  readonly runners = new Map<number, Runner>();
  /**
   * Ids of registrations that existed and are gone (removed by a DELETE, by the runner itself on a
   * 0 exit, or with their scale set), with their tenant. A later DELETE of one answers 204 as the
   * real service does: upstream's RemoveRunner accepts only 204 and its finalizer would otherwise
   * never finish a runner that deregistered itself. Ids never issued still answer 404.
   */
  readonly removedRunnerTenants = new Map<number, string>();
  readonly sessions = new Map<string, Session>();
  readonly jobs = new Map<string, Job>();
  readonly jobsByRequestId = new Map<number, Job>();
  nextScaleSetId = 1;
  nextRunnerId = 1;
  nextMessageId = 1;
  nextRunnerRequestId = 1;
  nextWorkflowRunId = 1000;

  constructor(
    readonly accounts: GitHubAccounts,
    readonly now: () => number,
    readonly timing: TimingOptions,
    readonly lifetimes: TokenLifetimes,
    readonly origin: () => string,
    readonly log: Logger,
  ) {}

  iso(ms = this.now()): string {
    return new Date(ms).toISOString();
  }

  tenantState(tenantId: string): TenantState {
    const t = this.tenants.get(tenantId);
    if (!t) throw vssError(404, 'VssResourceNotFoundException', `Tenant ${tenantId} does not exist.`);
    return t;
  }

  scaleSetIn(tenantId: string, id: number): ScaleSet {
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

  /** Drops a registration and remembers that it existed (see `removedRunnerTenants`). */
  forgetRunner(r: Runner): void {
    this.runners.delete(r.id);
    this.removedRunnerTenants.set(r.id, r.tenantId);
  }

  liveSessionOf(scaleSetId: number): Session | undefined {
    for (const s of this.sessions.values()) if (s.scaleSetId === scaleSetId) return s;
    return undefined;
  }

  /** Queues a message item for the scale set's listener; dropped when none is connected. */
  emit(scaleSetId: number, item: Record<string, unknown>): void {
    this.liveSessionOf(scaleSetId)?.queue.push(item);
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

  runnerGroupName(ss: ScaleSet): string {
    return this.tenants.get(ss.tenantId)?.groups.get(ss.runnerGroupId)?.name ?? '';
  }

  /** The scale set as the wire shows it (`RunnerScaleSet`), with its live statistics. */
  scaleSetJson(ss: ScaleSet): Record<string, unknown> {
    return {
      id: ss.id,
      name: ss.name,
      runnerGroupId: ss.runnerGroupId,
      runnerGroupName: this.runnerGroupName(ss),
      labels: ss.labels.map((l) => ({ ...l })),
      RunnerSetting: { ...ss.runnerSetting },
      createdOn: ss.createdOn,
      runnerJitConfigUrl: `${this.scaleSetUrl(ss.tenantId, ss.id)}/generatejitconfig`,
      statistics: this.statistics(ss.id),
    };
  }

  /** `{origin}/tenant/{tenant}/_apis/runtime/runnerscalesets/{id}`: the root of a scale set's URLs. */
  scaleSetUrl(tenantId: string, scaleSetId: number): string {
    return `${this.origin()}/tenant/${tenantId}/_apis/runtime/runnerscalesets/${scaleSetId}`;
  }
}
