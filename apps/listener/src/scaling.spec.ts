import { Registry } from 'prom-client';
import type { ResourceKind } from '@aro/api';
import type { JobMessageBase, JobStarted, RunnerScaleSetStatistic } from '@aro/actions';
import type { KubeObject } from '@aro/kube';
import { FakeClock } from '@aro/kube/testing';
import { silentLogger } from '@aro/observability';
import { GhaMetrics } from './gha-metrics';
import { WarmHeadroom } from './headroom';
import { JobBookkeeping } from './job-bookkeeping';
import { ListenerMetrics } from './listener-metrics';
import { PatchClient, Scaler } from './scaler';
import { EphemeralRunnerSetScaling } from './scaling';

/** The EphemeralRunnerSet spec as the merge patches leave it; runner status patches are accepted and dropped. */
class FakeApi implements PatchClient {
  spec: { replicas?: number; patchID?: number } = {};
  mergePatch<T extends KubeObject>(_k: ResourceKind, _ns: string, _n: string, patch: object): Promise<T> {
    const { spec } = patch as { spec?: { replicas: number; patchID: number } };
    if (spec) this.spec = { ...spec };
    return Promise.resolve({} as T);
  }
  mergePatchStatus<T extends KubeObject>(): Promise<T> {
    return Promise.resolve({} as T);
  }
}

const at = (ms: number) => new Date(ms).toISOString();

function job(n: number, assignedAt: number, startedAt: number): JobStarted {
  const base: JobMessageBase = {
    messageType: 'JobStarted',
    runnerRequestId: n,
    repositoryName: 'api',
    ownerName: 'octo',
    jobId: `job-${n}`,
    jobWorkflowRef: 'octo/api/.github/workflows/ci.yml@refs/heads/main',
    jobDisplayName: 'build',
    workflowRunId: 1,
    eventName: 'push',
    requestLabels: [],
    queueTime: at(assignedAt),
    scaleSetAssignTime: at(assignedAt),
    runnerAssignTime: at(startedAt),
    finishTime: '',
  };
  return { ...base, messageType: 'JobStarted', runnerId: n, runnerName: `runner-${n}` };
}

const stats = (assigned: number, idle: number): RunnerScaleSetStatistic => ({
  totalAvailableJobs: 0,
  totalAcquiredJobs: 0,
  totalAssignedJobs: assigned,
  totalRunningJobs: assigned,
  totalRegisteredRunners: assigned + idle,
  totalBusyRunners: assigned,
  totalIdleRunners: idle,
});

function setUp(headroom?: WarmHeadroom) {
  const clock = new FakeClock();
  const api = new FakeApi();
  const registry = new Registry();
  const logger = silentLogger;
  const scaling = new EphemeralRunnerSetScaling({
    scaler: new Scaler(api, { namespace: 'ns', name: 'set', minRunners: 1, maxRunners: 10, logger }),
    bookkeeping: new JobBookkeeping(api, { namespace: 'ns', logger, clock, qps: 100, burst: 100 }),
    gha: new GhaMetrics({
      registry,
      logger,
      scaleSet: { name: 'set', namespace: 'ns', enterprise: '', organization: 'octo', repository: '' },
    }),
    metrics: new ListenerMetrics(registry),
    clock,
    headroom,
  });
  const value = async (name: string) => (await registry.getSingleMetric(name)?.get())?.values[0]?.value ?? 0;
  return { clock, api, scaling, value };
}

describe('EphemeralRunnerSetScaling', () => {
  it('adds the warm headroom from the jobs it sees: arrivals over the window x the cold start time', async () => {
    const { clock, api, scaling, value } = setUp(new WarmHeadroom({ maxRunners: 5, windowMs: 60_000 }));
    const t0 = Date.parse('2026-12-07T10:00:00Z');
    // Four jobs reach the set and start on runners 30 s later (cold): 4 / 60 s x 30 s = 2.
    const jobs = [1, 2, 3, 4].map((n) => job(n, t0, t0 + 30_000));
    scaling.jobsChanged([], [], jobs);
    scaling.jobsChanged(jobs, []);
    await scaling.scale(stats(4, 0));
    expect(api.spec.replicas).toBe(1 + 4 + 2);
    expect(await value('aro_listener_headroom_runners')).toBe(2);
    expect(await value('aro_listener_runner_start_seconds')).toBe(30);
    // The jobs are done; within the window the set stays at minRunners + headroom.
    await clock.advance(30_000);
    await scaling.scale(stats(0, 3));
    expect(api.spec.replicas).toBe(3);
    // No arrival for the window: back to minRunners.
    await clock.advance(30_000);
    await scaling.scale(stats(0, 3));
    expect(api.spec.replicas).toBe(1);
    expect(await value('aro_listener_headroom_runners')).toBe(0);
  });

  it('is upstream without headroom, and counts idle runner-seconds from the statistics', async () => {
    const { clock, api, scaling, value } = setUp();
    const t0 = Date.parse('2026-12-07T10:00:00Z');
    const jobs = [1, 2].map((n) => job(n, t0, t0 + 30_000));
    scaling.jobsChanged([], [], jobs);
    scaling.jobsChanged(jobs, []);
    await scaling.scale(stats(2, 2));
    expect(api.spec.replicas).toBe(3);
    expect(await value('aro_listener_headroom_runners')).toBe(0);
    // 2 idle runners for 10 s, then 1 for 5 s.
    await clock.advance(10_000);
    await scaling.scale(stats(2, 1));
    await clock.advance(5_000);
    await scaling.scale(stats(0, 0));
    expect(api.spec.replicas).toBe(1);
    expect(await value('aro_listener_idle_runner_seconds_total')).toBe(25);
  });
});
