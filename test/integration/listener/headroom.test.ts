import type { V1Secret } from '@kubernetes/client-node';
import {
  Annotations,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  EphemeralRunner,
  EphemeralRunnerKind,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
  WarmHeadroomAnnotations,
} from '@aro/api';
import { KubeClient, SecretKind } from '@aro/kube';
import { DEFAULT_PAT, RunningSimulator, startSimulator } from '../../../apps/simulator/src';
import { createTestNamespace, testKubeConfig, waitFor } from '../../harness';
import { ListenerPlayer } from '../../harness/listener-player';
import { RunnerPlayer } from '../../harness/runner-player';
import { timeScale } from '../../harness/time-scale';
import { BootedApp, bootControllerApp } from '../controller-app/boot';

/*
 * Warm headroom through the whole of scale-set mode: two AutoscalingRunnerSets, one with the headroom
 * annotations and one without, get the same few jobs from the simulator; the controller makes their
 * listeners (run by the listener player) and runners (played with a start time, so the first jobs
 * measure one). After the jobs, the set with headroom keeps an idle runner above minRunners (0) while
 * the other is back at 0; once no job arrived for the window, the first one is back at 0 as well.
 */
describe('Warm headroom end to end', () => {
  jest.setTimeout(600_000);
  let sim: RunningSimulator;
  let kube: KubeClient;
  let namespace: string;
  let app: BootedApp | undefined;
  let listeners: ListenerPlayer | undefined;
  let runners: RunnerPlayer | undefined;

  beforeAll(async () => {
    sim = await startSimulator({
      seed: { timing: { longPollTimeoutMs: 1_000, autoStartJobs: true, sessionIdleTimeoutMs: 10_000 } },
    });
    kube = new KubeClient(testKubeConfig());
    const controllerNamespace = await createTestNamespace('headroom-system');
    namespace = await createTestNamespace('headroom');
    await kube.create<V1Secret>(SecretKind, {
      metadata: { name: 'gh', namespace },
      stringData: { github_token: DEFAULT_PAT },
    });
    app = await bootControllerApp({
      WATCH_NAMESPACE: namespace,
      LEADER_ELECTION: 'false',
      POD_NAMESPACE: controllerNamespace,
      CONTROLLER_MANAGER_CONTAINER_IMAGE: 'aro:test',
    });
    listeners = ListenerPlayer.start({ namespace: controllerNamespace });
    runners = new RunnerPlayer({
      kubeConfig: testKubeConfig(),
      namespace,
      service: sim,
      // A cold start of 2 s: well above the 1 s under which a start counts as warm.
      startDelayMs: 2_000,
      jobDurationMs: 300,
      // An idle runner leaves only when the listener scales it down, as a real one waits for work.
      jobWaitTimeoutMs: 600_000,
    }).start();
  });
  afterAll(async () => {
    await runners?.stop();
    await listeners?.stop();
    await app?.close();
    kube?.close();
    await sim?.stop();
  });

  async function createSet(name: string, annotations?: Record<string, string>): Promise<number> {
    await kube.create<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, {
      metadata: { name, namespace, annotations },
      spec: {
        githubConfigUrl: sim.configUrl({ org: 'octo' }),
        githubConfigSecret: 'gh',
        minRunners: 0,
        maxRunners: 10,
        template: {
          spec: { containers: [{ name: 'runner', image: 'ghcr.io/actions/actions-runner:latest' }] },
        },
      },
    });
    const id = await waitFor(
      async () => {
        const ars = await kube.get<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, namespace, name);
        const value = Number(ars.metadata?.annotations?.[Annotations.runnerScaleSetId]);
        return Number.isInteger(value) && value > 0 ? value : undefined;
      },
      { description: `the scale set id on ${name}`, timeoutMs: 60_000 },
    );
    await waitFor(() => sim.sessions().some((s) => s.scaleSetId === id), {
      description: `the listener of ${name} to open its session`,
      timeoutMs: 120_000,
    });
    return id;
  }

  /** The set's spec and its runners: which are idle (no job recorded, not being deleted). */
  async function setState(name: string) {
    const ers = (await kube.list<EphemeralRunnerSet>(EphemeralRunnerSetKind, { namespace })).find((s) =>
      s.metadata?.ownerReferences?.some((o) => o.name === name),
    );
    const runnersOfSet = (await kube.list<EphemeralRunner>(EphemeralRunnerKind, { namespace })).filter((r) =>
      r.metadata?.ownerReferences?.some((o) => o.name === ers?.metadata?.name),
    );
    const idle = runnersOfSet.filter((r) => !r.status?.jobId && !r.metadata?.deletionTimestamp);
    return { spec: ers?.spec, runners: runnersOfSet.length, idle: idle.length };
  }

  it('keeps idle runners above minRunners after a few arrivals and falls back once they stop; off by default', async () => {
    // The window outlasts the jobs (a few seconds) and the look at the sets after them.
    const windowSeconds = Math.round(40 * timeScale());
    const warmId = await createSet('warm', {
      [WarmHeadroomAnnotations.maxRunners]: '3',
      [WarmHeadroomAnnotations.windowSeconds]: String(windowSeconds),
    });
    const plainId = await createSet('plain');

    const jobs = [warmId, plainId].flatMap((scaleSetId) =>
      [1, 2, 3].map(() => sim.enqueueJob({ scaleSetId }).jobId),
    );
    const arrived = Date.now();
    await waitFor(() => jobs.every((j) => sim.job(j)?.result === 'succeeded'), {
      description: 'the six jobs succeeded',
      timeoutMs: 120_000,
    });
    // The set without headroom converges to minRunners (patchID 0) and its runners go: the controller
    // and listener have acted on the end of the jobs.
    await waitFor(
      async () => {
        const s = await setState('plain');
        return s.spec?.replicas === 0 && s.spec.patchID === 0 && s.runners === 0 ? s : undefined;
      },
      { description: 'the set without headroom back at 0 runners, converged', timeoutMs: 60_000 },
    );
    // Meanwhile the set with headroom holds an idle runner: its listener measured the cold starts
    // (~2 s) and the rate (3 jobs in the window), ceil(3 / window x 2 s) = 1.
    const warm = await waitFor(
      async () => {
        const s = await setState('warm');
        return (s.spec?.replicas ?? 0) >= 1 && s.idle >= 1 ? s : undefined;
      },
      { description: 'an idle runner kept above minRunners on the set with headroom', timeoutMs: 60_000 },
    );
    expect(Date.now() - arrived).toBeLessThan(windowSeconds * 1000);
    expect(warm.spec?.replicas).toBeLessThanOrEqual(3);
    expect(sim.jobs().filter((j) => j.scaleSetId === warmId && j.state !== 'completed')).toEqual([]);

    // No job for the window: the headroom decays to 0 and the set converges back to minRunners.
    await waitFor(
      async () => {
        const s = await setState('warm');
        return s.spec?.replicas === 0 && s.spec.patchID === 0 && s.runners === 0 ? s : undefined;
      },
      {
        description: 'the set with headroom back at 0 runners once no job arrived for the window',
        timeoutMs: windowSeconds * 1000 + 60_000,
      },
    );
    expect(Date.now() - arrived).toBeGreaterThanOrEqual(windowSeconds * 1000);
    expect(runners?.errors).toEqual([]);
    expect(runners?.deletedDuringJob.size).toBe(0);
  });
});
