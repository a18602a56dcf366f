import type { Tenant } from '../accounts';
import { vssError } from '../errors';
import type { ScaleSetLabel, ScaleSetView } from '../types';
import type { Jobs } from './jobs';
import type { ScaleSet } from './model';
import type { Sessions } from './sessions';
import type { ActionsStore } from './store';

/**
 * Tenants, their runner groups, and the scale sets registered in them. Every change to a scale set can
 * change which queued jobs fit where, so each one ends by dispatching the queue again.
 */
export class ScaleSets {
  /**
   * GHES before 3.18 (or the service with its labels flag off) keeps only the scale set's name as its
   * label and drops the others without an error, on create and on update alike.
   */
  extraLabelsIgnored = false;

  constructor(
    private readonly store: ActionsStore,
    private readonly sessions: Sessions,
    private readonly jobs: Jobs,
  ) {}

  // ---- tenants and runner groups -------------------------------------------------------------

  addTenant(tenant: Tenant): void {
    this.store.tenants.set(tenant.id, {
      tenant,
      groups: new Map([[1, { id: 1, name: 'Default', isDefault: true }]]),
      nextGroupId: 2,
    });
  }

  createRunnerGroup(tenantId: string, name: string): number {
    const t = this.store.tenantState(tenantId);
    const existing = [...t.groups.values()].find((g) => g.name.toLowerCase() === name.toLowerCase());
    if (existing) return existing.id;
    const id = t.nextGroupId++;
    t.groups.set(id, { id, name, isDefault: false });
    return id;
  }

  runnerGroupsByName(tenantId: string, groupName: string | null): Array<Record<string, unknown>> {
    const t = this.store.tenantState(tenantId);
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
    for (const r of this.store.runners.values()) {
      const ss = this.store.scaleSets.get(r.scaleSetId);
      if (r.tenantId === tenantId && ss?.runnerGroupId === groupId) n++;
    }
    return n;
  }

  private assertGroupExists(tenantId: string, groupId: number): void {
    if (!this.store.tenantState(tenantId).groups.has(groupId)) {
      throw vssError(
        404,
        'RunnerGroupNotFoundException',
        `No runner group found with identifier: ${groupId}.`,
      );
    }
  }

  // ---- scale sets ----------------------------------------------------------------------------

  find(tenantId: string, runnerGroupId: number | null, name: string | null): Array<Record<string, unknown>> {
    this.store.tenantState(tenantId);
    return [...this.store.scaleSets.values()]
      .filter(
        (ss) =>
          ss.tenantId === tenantId &&
          (runnerGroupId === null || ss.runnerGroupId === runnerGroupId) &&
          (name === null || ss.name.toLowerCase() === name.toLowerCase()),
      )
      .map((ss) => this.store.scaleSetJson(ss));
  }

  get(tenantId: string, id: number): Record<string, unknown> {
    return this.store.scaleSetJson(this.store.scaleSetIn(tenantId, id));
  }

  create(tenantId: string, body: Record<string, unknown>): Record<string, unknown> {
    this.store.tenantState(tenantId);
    const name = typeof body.name === 'string' ? body.name.trim() : '';
    if (!name) throw vssError(400, 'ArgumentException', 'The runner scale set name must not be empty.');
    const groupId = typeof body.runnerGroupId === 'number' && body.runnerGroupId > 0 ? body.runnerGroupId : 1;
    this.assertGroupExists(tenantId, groupId);
    this.assertNameFree(tenantId, groupId, name, null);
    const ss: ScaleSet = {
      id: this.store.nextScaleSetId++,
      tenantId,
      name,
      runnerGroupId: groupId,
      labels: this.kept(normaliseLabels(body.labels, name), name),
      runnerSetting: isRecord(body.RunnerSetting) ? { ...body.RunnerSetting } : {},
      createdOn: this.store.iso(),
      maxCapacity: null,
    };
    this.store.scaleSets.set(ss.id, ss);
    this.store.log.info('Created runner scale set', { tenantId, scaleSetId: ss.id, name });
    this.jobs.dispatchQueuedJobs();
    return this.store.scaleSetJson(ss);
  }

  private assertNameFree(tenantId: string, groupId: number, name: string, self: number | null): void {
    for (const other of this.store.scaleSets.values()) {
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
  update(tenantId: string, id: number, body: Record<string, unknown>): Record<string, unknown> {
    const ss = this.store.scaleSetIn(tenantId, id);
    const name = typeof body.name === 'string' && body.name.trim() ? body.name.trim() : ss.name;
    const groupId =
      typeof body.runnerGroupId === 'number' && body.runnerGroupId > 0
        ? body.runnerGroupId
        : ss.runnerGroupId;
    this.assertGroupExists(tenantId, groupId);
    this.assertNameFree(tenantId, groupId, name, ss.id);
    ss.name = name;
    ss.runnerGroupId = groupId;
    if (Array.isArray(body.labels) && body.labels.length > 0)
      ss.labels = this.kept(normaliseLabels(body.labels, name), name);
    if (isRecord(body.RunnerSetting)) ss.runnerSetting = { ...ss.runnerSetting, ...body.RunnerSetting };
    this.jobs.dispatchQueuedJobs();
    return this.store.scaleSetJson(ss);
  }

  private kept(labels: ScaleSetLabel[], name: string): ScaleSetLabel[] {
    return this.extraLabelsIgnored ? [{ type: 'System', name }] : labels;
  }

  /** Drops the scale set with its runners and sessions; its unfinished jobs go back to the queue. */
  delete(tenantId: string, id: number): void {
    const ss = this.store.scaleSetIn(tenantId, id);
    for (const session of [...this.store.sessions.values()])
      if (session.scaleSetId === id) this.sessions.close(session);
    for (const job of this.store.jobs.values()) {
      if (job.scaleSetId !== id || job.state === 'completed') continue;
      if (job.state === 'running') {
        this.jobs.finish(job, 'canceled');
      } else {
        this.jobs.requeue(job);
      }
    }
    for (const r of [...this.store.runners.values()]) if (r.scaleSetId === id) this.store.forgetRunner(r);
    this.store.scaleSets.delete(ss.id);
    this.store.log.info('Deleted runner scale set', { tenantId, scaleSetId: id, name: ss.name });
    this.jobs.dispatchQueuedJobs();
  }

  views(): ScaleSetView[] {
    return [...this.store.scaleSets.values()].map((ss) => ({
      id: ss.id,
      name: ss.name,
      tenantId: ss.tenantId,
      runnerGroupId: ss.runnerGroupId,
      runnerGroupName: this.store.runnerGroupName(ss),
      labels: ss.labels.map((l) => ({ ...l })),
      runnerSetting: { ...ss.runnerSetting },
      createdOn: ss.createdOn,
      statistics: this.store.statistics(ss.id),
    }));
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
