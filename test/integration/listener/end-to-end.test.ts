import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import {
  Annotations,
  AutoscalingListener,
  AutoscalingListenerKind,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  EphemeralRunner,
  EphemeralRunnerKind,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
} from '@aro/api';
import { KubeClient, PodKind, SecretKind } from '@aro/kube';
import { DEFAULT_PAT, RunningSimulator, startSimulator } from '../../../apps/simulator/src';
import type { JobView } from '../../../apps/simulator/src';
import { createTestNamespace, percentile, testKubeConfig, waitFor } from '../../harness';
import { HighWater } from '../../harness/high-water';
import { ListenerPlayer } from '../../harness/listener-player';
import { RunnerPlayer } from '../../harness/runner-player';
import { BootedApp, bootControllerApp } from '../controller-app/boot';

/*
 * The whole of scale-set mode: AutoscalingRunnerSet -> (controller) scale set, EphemeralRunnerSet,
 * AutoscalingListener -> listener pod -> (this file's listener player) the real listener process ->
 * EphemeralRunnerSet patches -> (controller) EphemeralRunners -> runner pods -> (this file's runner
 * player) runners that take their job on the simulator, run it for a moment and exit 0.
 */
const MAX_RUNNERS = 10;
const JOBS = 50;

describe('Scale-set mode end to end (controllers + listener process + simulator)', () => {
  jest.setTimeout(600_000);
  let sim: RunningSimulator;
  let kube: KubeClient;
  let controllerNamespace: string;
  let app: BootedApp | undefined;
  let listeners: ListenerPlayer | undefined;
  const perTest: Array<{ stop(): unknown }> = [];

  beforeAll(async () => {
    sim = await startSimulator({
      seed: { timing: { longPollTimeoutMs: 2_000, autoStartJobs: true, sessionIdleTimeoutMs: 10_000 } },
    });
    kube = new KubeClient(testKubeConfig());
    controllerNamespace = await createTestNamespace('e2e-system');
    // One controller for the whole file, as in a cluster: each test's scale set lives in its own namespace.
    app = await bootControllerApp({
      LEADER_ELECTION: 'false',
      POD_NAMESPACE: controllerNamespace,
      // The image listener pods get; the listener player runs the listener from source whatever it says.
      CONTROLLER_MANAGER_CONTAINER_IMAGE: 'aro:test',
    });
    listeners = ListenerPlayer.start({ namespace: controllerNamespace });
  });
  afterEach(async () => {
    for (const p of perTest.splice(0)) await p.stop();
  });
  afterAll(async () => {
    await listeners?.stop();
    await app?.close();
    kube?.close();
    await sim?.stop();
  });

  /** What the controller and the listener player did, for a failing test's message. */
  async function listenerState(): Promise<string> {
    const pods = await kube.list<V1Pod>(PodKind, { namespace: controllerNamespace });
    const als = await kube.list<AutoscalingListener>(AutoscalingListenerKind, {
      namespace: controllerNamespace,
    });
    return [
      `listener pods: ${pods.map((p) => `${p.metadata?.name} uid=${p.metadata?.uid} ${p.status?.phase ?? '-'}${p.metadata?.deletionTimestamp ? ' deleting' : ''}`).join('; ')}`,
      `listeners: ${als.map((l) => `${l.metadata?.name} ${JSON.stringify(l.status ?? {})}`).join('; ')}`,
      `sessions: ${JSON.stringify(sim.sessions())}`,
      ...listeners!.history.map(
        (h) =>
          `process of ${h.pod} uid=${h.uid} exit=${h.exitCode} signal=${h.signal}\n${ListenerPlayer.tail(h)}`,
      ),
    ].join('\n');
  }

  /**
   * A namespace with the credentials, its runner pods played, and an AutoscalingRunnerSet whose listener
   * has opened its session. The scale set is found by the id the controller recorded on this namespace's
   * AutoscalingRunnerSet.
   */
  async function setUp(name: string) {
    const namespace = await createTestNamespace(name);
    // The scale set is named after the AutoscalingRunnerSet, and the service knows one scale set per
    // name in a runner group: two tests both calling theirs `arc` would share it, and the first test's
    // namespace cleanup (the set's finalizer deletes its scale set) would pull it from under the second.
    const arsName = `arc-${name}`;
    await kube.create<V1Secret>(SecretKind, {
      metadata: { name: 'gh', namespace },
      stringData: { github_token: DEFAULT_PAT },
    });
    const runners = new RunnerPlayer({
      kubeConfig: testKubeConfig(),
      namespace,
      service: sim,
      jobDurationMs: 300,
      // An idle runner leaves only when the listener scales it down, as a real one waits for work.
      jobWaitTimeoutMs: 600_000,
    }).start();
    const highWater = new HighWater(kube, namespace).start();
    perTest.push(runners, highWater);
    await kube.create<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, {
      metadata: { name: arsName, namespace },
      spec: {
        githubConfigUrl: sim.configUrl({ org: 'octo' }),
        githubConfigSecret: 'gh',
        minRunners: 0,
        maxRunners: MAX_RUNNERS,
        template: {
          spec: { containers: [{ name: 'runner', image: 'ghcr.io/actions/actions-runner:latest' }] },
        },
      },
    });
    const scaleSetId = await waitFor(
      async () => {
        const ars = await kube.get<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, namespace, arsName);
        const id = Number(ars.metadata?.annotations?.[Annotations.runnerScaleSetId]);
        return Number.isInteger(id) && id > 0 ? id : undefined;
      },
      { description: `the scale set id on ${namespace}/${arsName}`, timeoutMs: 60_000 },
    );
    const session = await waitFor(() => sim.sessions().find((s) => s.scaleSetId === scaleSetId), {
      description: `the listener of ${namespace}/${arsName} to open its session`,
      timeoutMs: 120_000,
    });
    const listener = (
      await kube.list<AutoscalingListener>(AutoscalingListenerKind, { namespace: controllerNamespace })
    ).find((l) => l.spec.autoscalingRunnerSetNamespace === namespace);
    if (!listener?.metadata?.name) throw new Error(`no AutoscalingListener for ${namespace}/${arsName}`);
    return { namespace, scaleSetId, session, runners, highWater, listenerPod: listener.metadata.name };
  }

  it('runs 50 jobs in bursts, each on its own runner, never above maxRunners, and scales back to 0', async () => {
    const { namespace, scaleSetId, runners, highWater } = await setUp('e2e');
    const jobs: JobView[] = [];
    for (let burst = 0; burst < 5; burst++) {
      for (let i = 0; i < JOBS / 5; i++) jobs.push(sim.enqueueJob({ scaleSetId }));
      await new Promise((r) => setTimeout(r, 2_000));
    }
    await waitFor(() => jobs.every((j) => sim.job(j.jobId)?.state === 'completed'), {
      description: `all ${JOBS} jobs completed`,
      timeoutMs: 400_000,
      intervalMs: 1_000,
    });
    const done = jobs.map((j) => sim.job(j.jobId)!);
    expect(done.filter((j) => j.result !== 'succeeded')).toEqual([]);
    // Each on its own runner, started once: a runner deleted while holding a job would have failed or
    // re-queued it, and the player would have recorded the runner as deleted.
    expect(new Set(done.map((j) => j.runnerName)).size).toBe(JOBS);
    expect(done.filter((j) => j.startAttempts !== 1)).toEqual([]);
    expect(runners.errors).toEqual([]);

    await waitFor(
      async () => {
        const ers = await kube.list<EphemeralRunnerSet>(EphemeralRunnerSetKind, { namespace });
        const left = await kube.list<EphemeralRunner>(EphemeralRunnerKind, { namespace });
        return ers[0]?.spec.replicas === 0 && left.length === 0;
      },
      { description: 'the set scaled back to 0 runners', timeoutMs: 120_000 },
    );
    expect(sim.registrations().filter((r) => r.scaleSetId === scaleSetId)).toEqual([]);
    expect(highWater.samples).toBeGreaterThan(10);
    expect(highWater.runners).toBeLessThanOrEqual(MAX_RUNNERS);
    expect(highWater.pods).toBeLessThanOrEqual(MAX_RUNNERS);
    // Pods deleted under a runner: only idle ones may be (scale-down); that none held a job is checked
    // above by every job's single start and result. Reported for the reader.
    const trimmed = [...runners.outcomes.values()].filter((o) => o === 'deleted').length;

    const waits = done
      .map((j) => Date.parse(j.runnerAssignTime) - Date.parse(j.queueTime))
      .sort((a, b) => a - b);
    process.stdout.write(
      `listener e2e: ${JOBS} jobs, wait queued->started p50 ${percentile(waits, 50)} ms, p95 ${percentile(waits, 95)} ms, ` +
        `most live runners at once ${highWater.runners} (EphemeralRunner objects ${highWater.objects}), idle runners trimmed ${trimmed}\n`,
    );
  });

  it('carries on when the listener process is killed mid-run: a new pod, a new session, nothing lost', async () => {
    const { scaleSetId, session: first, listenerPod } = await setUp('e2e-kill');
    const victim = await waitFor(() => listeners!.running().find((l) => l.pod === listenerPod), {
      description: `the listener process of pod ${listenerPod}`,
      timeoutMs: 60_000,
    });
    const before = Array.from({ length: 5 }, () => sim.enqueueJob({ scaleSetId }));
    listeners!.kill(victim.pod);
    const after = Array.from({ length: 5 }, () => sim.enqueueJob({ scaleSetId }));
    await waitFor(
      () => sim.sessions().some((s) => s.scaleSetId === scaleSetId && s.sessionId !== first.sessionId),
      { description: 'a new session from the recreated listener pod', timeoutMs: 180_000 },
    ).catch(async (err: unknown) => {
      throw new Error(`${(err as Error).message}\n${await listenerState()}`);
    });
    await waitFor(() => [...before, ...after].every((j) => sim.job(j.jobId)?.result === 'succeeded'), {
      description: 'every job, before and after the kill, succeeded',
      timeoutMs: 300_000,
      intervalMs: 1_000,
    });
    const done = [...before, ...after].map((j) => sim.job(j.jobId)!);
    expect(new Set(done.map((j) => j.runnerName)).size).toBe(done.length);
  });
});
