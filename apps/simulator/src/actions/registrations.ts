import { vssError } from '../errors';
import type { RunnerView } from '../types';
import type { JitConfigPayload, Runner } from './model';
import type { ActionsStore } from './store';

/**
 * Runner registrations as the protocol sees them: one per JIT config, looked up by id or name and
 * removed by the controller. A registration that still holds a job cannot be removed.
 */
export class Registrations {
  constructor(private readonly store: ActionsStore) {}

  generateJitConfig(
    tenantId: string,
    scaleSetId: number,
    body: Record<string, unknown>,
  ): Record<string, unknown> {
    const ss = this.store.scaleSetIn(tenantId, scaleSetId);
    const name = typeof body.name === 'string' ? body.name.trim() : '';
    if (!name) throw vssError(400, 'ArgumentException', 'The runner name must not be empty.');
    const taken = this.byName(tenantId, name);
    if (taken) {
      throw vssError(
        409,
        'TaskAgentExistsException',
        `A runner with the name '${name}' already exists (id ${taken.id}).`,
      );
    }
    const runner: Runner = {
      id: this.store.nextRunnerId++,
      name,
      tenantId,
      scaleSetId: ss.id,
      online: false,
      jobId: null,
      ranJobId: null,
      workFolder: typeof body.workFolder === 'string' ? body.workFolder : '',
      createdOn: this.store.iso(),
    };
    this.store.runners.set(runner.id, runner);
    const payload: JitConfigPayload = {
      runnerId: runner.id,
      runnerName: runner.name,
      runnerScaleSetId: ss.id,
      tenantId,
      workFolder: runner.workFolder,
      simulatorUrl: this.store.origin(),
    };
    this.store.log.debug('Registered runner from a JIT config', {
      tenantId,
      scaleSetId: ss.id,
      runnerId: runner.id,
      name,
    });
    return {
      runner: runnerReference(runner),
      encodedJITConfig: Buffer.from(JSON.stringify(payload), 'utf8').toString('base64'),
    };
  }

  private byName(tenantId: string, name: string): Runner | undefined {
    for (const r of this.store.runners.values()) {
      if (r.tenantId === tenantId && r.name.toLowerCase() === name.toLowerCase()) return r;
    }
    return undefined;
  }

  private runnerIn(tenantId: string, id: number): Runner {
    const r = this.store.runners.get(id);
    if (!r || r.tenantId !== tenantId) {
      throw vssError(404, 'TaskAgentNotFoundException', `No agent found in pool 0 with identifier ${id}.`);
    }
    return r;
  }

  get(tenantId: string, id: number): Record<string, unknown> {
    return runnerReference(this.runnerIn(tenantId, id));
  }

  /** Every runner of the tenant when `name` is null (orphan sweeps), else the one with that name (0 or 1). */
  list(tenantId: string, name: string | null): Array<Record<string, unknown>> {
    this.store.tenantState(tenantId);
    if (name !== null) {
      const r = this.byName(tenantId, name);
      return r ? [runnerReference(r)] : [];
    }
    return [...this.store.runners.values()].filter((r) => r.tenantId === tenantId).map(runnerReference);
  }

  remove(tenantId: string, id: number): void {
    if (!this.store.runners.has(id) && this.store.removedRunnerTenants.get(id) === tenantId) {
      this.store.log.debug('Runner registration already removed', { tenantId, runnerId: id });
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
    this.store.forgetRunner(r);
    this.store.log.debug('Removed runner registration', { tenantId, runnerId: r.id, name: r.name });
  }

  views(): RunnerView[] {
    return [...this.store.runners.values()].map(runnerView);
  }
}

/** The registration as the wire shows it (`RunnerReference`). */
function runnerReference(r: Runner): Record<string, unknown> {
  return {
    id: r.id,
    name: r.name,
    runnerScaleSetId: r.scaleSetId,
    status: r.online ? 'online' : 'offline',
  };
}

/** The registration as the admin API shows it: busy while it holds a job. */
export function runnerView(r: Runner): RunnerView {
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
