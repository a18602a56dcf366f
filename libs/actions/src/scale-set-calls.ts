import { ActionsError } from './errors';
import { RunnerCalls } from './runner-calls';
import { type CallOptions, scaleSetsPath } from './service-call';
import {
  fromWireScaleSet,
  type RunnerGroup,
  type RunnerScaleSet,
  type RunnerScaleSetCreate,
  type RunnerScaleSetUpdate,
  toWireCreate,
  toWireUpdate,
  type WireRunnerScaleSet,
} from './types';

const runnerGroupsPath = '_apis/runtime/runnergroups/';

/** Runner groups and scale sets: what the AutoscalingRunnerSet controller keeps on the service. */
export class ScaleSetCalls extends RunnerCalls {
  async getRunnerGroupByName(name: string, opts: CallOptions = {}): Promise<RunnerGroup> {
    const res = await this.read(runnerGroupsPath, 'GET runnergroups?groupName', opts, { groupName: name });
    const group = this.atMostOne<RunnerGroup>(res, `runner groups named ${JSON.stringify(name)}`);
    if (!group) {
      throw new ActionsError({
        kind: 'NotFound',
        method: 'GET',
        url: res.url,
        activityId: res.activityId,
        detail: `no runner group found with name ${JSON.stringify(name)}`,
      });
    }
    return group;
  }

  async getRunnerScaleSet(
    runnerGroupId: number,
    name: string,
    opts: CallOptions = {},
  ): Promise<RunnerScaleSet | undefined> {
    const res = await this.read(scaleSetsPath, 'GET runnerscalesets?runnerGroupId&name', opts, {
      runnerGroupId: String(runnerGroupId),
      name,
    });
    const found = this.atMostOne<WireRunnerScaleSet>(
      res,
      `scale sets named ${JSON.stringify(name)} in group ${runnerGroupId}`,
    );
    return found && fromWireScaleSet(found);
  }

  async getRunnerScaleSetById(id: number, opts: CallOptions = {}): Promise<RunnerScaleSet> {
    const res = await this.read(`${scaleSetsPath}/${id}`, 'GET runnerscalesets/{id}', opts);
    return fromWireScaleSet(res.json as WireRunnerScaleSet);
  }

  async createRunnerScaleSet(rs: RunnerScaleSetCreate, opts: CallOptions = {}): Promise<RunnerScaleSet> {
    const res = await this.write(
      'POST',
      scaleSetsPath,
      'POST runnerscalesets',
      toWireCreate(rs),
      'once',
      opts,
    );
    return fromWireScaleSet(res.json as WireRunnerScaleSet);
  }

  async updateRunnerScaleSet(
    id: number,
    update: RunnerScaleSetUpdate,
    opts: CallOptions = {},
  ): Promise<RunnerScaleSet> {
    // Repeatable: setting the same fields twice leaves the same scale set.
    const res = await this.write(
      'PATCH',
      `${scaleSetsPath}/${id}`,
      'PATCH runnerscalesets/{id}',
      toWireUpdate(update),
      'idempotent',
      opts,
    );
    return fromWireScaleSet(res.json as WireRunnerScaleSet);
  }

  async deleteRunnerScaleSet(id: number, opts: CallOptions = {}): Promise<void> {
    await this.remove(`${scaleSetsPath}/${id}`, 'DELETE runnerscalesets/{id}', opts);
  }
}
