import { ActionsServiceCalls, type CallOptions, scaleSetsPath } from './service-call';
import type { RunnerReference, RunnerScaleSetJitRunnerConfig } from './types';

const agentsPath = '_apis/distributedtask/pools/0/agents';

/** The runners of a scale set on the Actions service: registration (JIT config), lookup, removal. */
export class RunnerCalls extends ActionsServiceCalls {
  async generateJitRunnerConfig(
    setting: { name: string; workFolder?: string },
    scaleSetId: number,
    opts: CallOptions = {},
  ): Promise<RunnerScaleSetJitRunnerConfig> {
    const res = await this.write(
      'POST',
      `${scaleSetsPath}/${scaleSetId}/generatejitconfig`,
      'POST runnerscalesets/{id}/generatejitconfig',
      { name: setting.name, workFolder: setting.workFolder ?? '' },
      'once',
      opts,
    );
    return res.json as RunnerScaleSetJitRunnerConfig;
  }

  async getRunner(runnerId: number, opts: CallOptions = {}): Promise<RunnerReference> {
    const res = await this.read(`${agentsPath}/${runnerId}`, 'GET agents/{id}', opts);
    return res.json as RunnerReference;
  }

  async getRunnerByName(name: string, opts: CallOptions = {}): Promise<RunnerReference | undefined> {
    const res = await this.read(agentsPath, 'GET agents?agentName', opts, { agentName: name });
    return this.atMostOne(res, `runners named ${JSON.stringify(name)}`);
  }

  async removeRunner(runnerId: number, opts: CallOptions = {}): Promise<void> {
    await this.remove(`${agentsPath}/${runnerId}`, 'DELETE agents/{id}', opts);
  }

  /** Every runner registered in the tenant, or those of one scale set. */
  async listRunners(scaleSetId?: number, opts: CallOptions = {}): Promise<RunnerReference[]> {
    const res = await this.read(agentsPath, 'GET agents', opts);
    const runners = this.list<RunnerReference>(res);
    return scaleSetId === undefined ? runners : runners.filter((r) => r.runnerScaleSetId === scaleSetId);
  }
}
