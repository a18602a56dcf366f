// Contract: the client cache shares one client (and its admin token) per scale-set configuration.
import { MultiClient } from '@aro/actions';
import { silentLogger } from '@aro/observability';
import { Registry } from 'prom-client';
import { DEFAULT_PAT, RunningSimulator, startSimulator } from '../../../apps/simulator/src';
import { fastRetry } from './support';

describe('MultiClient against the simulator', () => {
  let sim: RunningSimulator;
  let multi: MultiClient;

  beforeEach(async () => {
    sim = await startSimulator();
    multi = new MultiClient({ logger: silentLogger, registry: new Registry(), retry: fastRetry });
  });

  afterEach(async () => {
    await multi.close();
    await sim.stop();
  });

  const forScaleSet = (token: string) =>
    multi.getClientFor({
      configUrl: sim.configUrl({ org: 'octo' }),
      namespace: 'arc-runners',
      credentials: { kind: 'pat', token },
    });

  it('hands every runner of a scale set the same client, which authenticates once', async () => {
    const first = forScaleSet(DEFAULT_PAT);
    await first.createRunnerScaleSet({ name: 'shared', runnerGroupId: 1 });
    const second = forScaleSet(DEFAULT_PAT);
    expect(second).toBe(first);
    await second.listRunners();
    expect(sim.callCount('POST actions/runner-registration')).toBe(1);
  });

  it('authenticates a new client with rotated credentials', async () => {
    await forScaleSet(DEFAULT_PAT).listRunners();
    sim.addPat('ghp_rotated');
    const rotated = forScaleSet('ghp_rotated');
    expect(await rotated.listRunners()).toEqual([]);
    expect(sim.callCount('POST actions/runner-registration')).toBe(2);
  });
});
