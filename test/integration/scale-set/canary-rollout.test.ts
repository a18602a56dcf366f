import type { CoreV1Event, V1Secret } from '@kubernetes/client-node';
import {
  Annotations,
  AutoscalingListener,
  AutoscalingListenerKind,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  CANARY_CONDITION,
  CanaryAnnotations,
  CanaryReasons,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
} from '@aro/api';
import { EventKind, KubeClient, SecretKind } from '@aro/kube';
import { DEFAULT_PAT, RunningSimulator, startSimulator } from '../../../apps/simulator/src';
import { createTestNamespace, testKubeConfig, waitFor } from '../../harness';
import { HighWater } from '../../harness/high-water';
import { ListenerPlayer } from '../../harness/listener-player';
import { RunnerPlayer } from '../../harness/runner-player';
import { BootedApp, bootControllerApp } from '../controller-app/boot';

/*
 * Canary roll-outs end to end: controller, listener (the listener player) and runners (the runner
 * player, whose jobs fail on one image) against the simulator. A set in canary mode gets a runner
 * image whose jobs fail: the canary runners take jobs, the first failure rolls the change back by
 * itself, the set keeps the previous image, the canary runners drain without a running job cut short,
 * and the Event and condition name the change. Then an image whose jobs succeed: promoted, and every
 * runner moves to it.
 */
const SET = 'canary';
const GOOD = 'ghcr.io/actions/actions-runner:2.330.0';
const BAD = 'registry.example/broken-runner:1';
const NEXT = 'ghcr.io/actions/actions-runner:2.331.0';
const LATER = 'ghcr.io/actions/actions-runner:2.332.0';

describe('Canary roll-out of a runner template change', () => {
  jest.setTimeout(900_000);
  let sim: RunningSimulator;
  let kube: KubeClient;
  let namespace: string;
  let scaleSetId: number;
  let app: BootedApp | undefined;
  let listeners: ListenerPlayer | undefined;
  let runners: RunnerPlayer | undefined;
  let drawn = 0;

  beforeAll(async () => {
    sim = await startSimulator({
      seed: { timing: { longPollTimeoutMs: 1_000, autoStartJobs: true, sessionIdleTimeoutMs: 10_000 } },
    });
    kube = new KubeClient(testKubeConfig());
    const controllerNamespace = await createTestNamespace('canary-system');
    namespace = await createTestNamespace('canary');
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
      // Short and long jobs in turn: the two canary runners take the first two jobs together, so one
      // of them is still in its (long) job when the other's failure rolls the change back.
      jobDurationMs: () => (++drawn % 2 === 1 ? 1_500 : 15_000),
      failingImages: [BAD],
      jobWaitTimeoutMs: 600_000,
    }).start();

    await kube.create<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, {
      metadata: {
        name: SET,
        namespace,
        annotations: { [CanaryAnnotations.runners]: '2', [CanaryAnnotations.jobs]: '3' },
      },
      spec: {
        githubConfigUrl: sim.configUrl({ org: 'octo' }),
        githubConfigSecret: 'gh',
        minRunners: 0,
        maxRunners: 10,
        template: { spec: { containers: [{ name: 'runner', image: GOOD }] } },
      },
    });
    scaleSetId = await waitFor(
      async () => {
        const ars = await kube.get<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, namespace, SET);
        const value = Number(ars.metadata?.annotations?.[Annotations.runnerScaleSetId]);
        return Number.isInteger(value) && value > 0 ? value : undefined;
      },
      { description: 'the scale set id', timeoutMs: 60_000 },
    );
    await waitFor(() => sim.sessions().some((s) => s.scaleSetId === scaleSetId), {
      description: 'the listener to open its session',
      timeoutMs: 120_000,
    });
  });
  afterAll(async () => {
    await runners?.stop();
    await listeners?.stop();
    await app?.close();
    kube?.close();
    await sim?.stop();
  });

  const setImage = async (image: string): Promise<void> => {
    await kube.mergePatch(AutoscalingRunnerSetKind, namespace, SET, {
      spec: { template: { spec: { containers: [{ name: 'runner', image }] } } },
    });
  };
  const runnerSets = (): Promise<EphemeralRunnerSet[]> =>
    kube.list<EphemeralRunnerSet>(EphemeralRunnerSetKind, { namespace });
  const imageOf = (set: EphemeralRunnerSet | undefined): string | undefined =>
    set?.spec.ephemeralRunnerSpec?.spec?.containers?.[0]?.image;
  const canaryCondition = async () =>
    (await kube.get<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, namespace, SET)).status?.conditions?.find(
      (c) => c.type === CANARY_CONDITION,
    );

  /** Jobs one after another (each once the previous one ended), until `until` holds. */
  async function feedJobs(until: () => Promise<boolean>, description: string): Promise<string[]> {
    const jobs: string[] = [];
    await waitFor(
      async () => {
        if (await until()) return true;
        const open = jobs.filter((j) => sim.job(j)?.state !== 'completed');
        if (open.length < 2) jobs.push(sim.enqueueJob({ scaleSetId }).jobId);
        return false;
      },
      { description, timeoutMs: 240_000, intervalMs: 500 },
    );
    return jobs;
  }

  it('rolls a change whose jobs fail back by itself, without cutting a running job short', async () => {
    await setImage(BAD);
    const canarySet = await waitFor(
      async () =>
        (await runnerSets()).find(
          (s) => imageOf(s) === BAD && s.metadata?.name?.startsWith(`${SET}-canary-`),
        ),
      { description: 'the canary EphemeralRunnerSet with the new image', timeoutMs: 60_000 },
    );
    expect(canarySet.spec.replicas).toBe(2);

    const jobs = await feedJobs(
      async () => (await canaryCondition())?.reason === CanaryReasons.rolledBack,
      'the set to roll the change back',
    );
    const condition = await canaryCondition();
    const hash = canarySet.metadata?.annotations?.[CanaryAnnotations.canaryOf] ?? '';
    expect(condition?.status).toBe('False');
    expect(condition?.message).toContain(hash);
    expect(condition?.message).toContain(BAD);
    expect(condition?.message).toMatch(/\d+\/\d+ canary jobs failed/);
    expect(condition?.message).toContain('first failure: job');
    const event = await waitFor(
      async () =>
        (await kube.list<CoreV1Event>(EventKind, { namespace })).find(
          (e) => e.involvedObject?.name === SET && e.reason === CanaryReasons.rolledBack,
        ),
      { description: 'the roll-back Warning Event', timeoutMs: 30_000 },
    );
    expect(event.type).toBe('Warning');
    expect(event.message).toContain(hash);
    expect(event.message).toContain(BAD);

    // The set keeps the previous image and the canary set drains away; no job was cut short.
    await waitFor(
      async () => !(await runnerSets()).some((s) => s.metadata?.name === canarySet.metadata?.name),
      {
        description: 'the canary EphemeralRunnerSet to drain and go',
        timeoutMs: 120_000,
      },
    );
    const own = (await runnerSets()).find((s) => s.metadata?.name === SET);
    expect(imageOf(own)).toBe(GOOD);
    await waitFor(() => jobs.every((j) => sim.job(j)?.state === 'completed'), {
      description: 'every job fed to finish',
      timeoutMs: 120_000,
    });
    expect(jobs.map((j) => sim.job(j)?.result).filter((r) => r === 'canceled')).toEqual([]);
    expect(runners?.deletedDuringJob.size).toBe(0);
    // Evidence that the roll-back met a busy canary runner: a canary job finished after it, by itself.
    const rolledBackAt = Date.parse(condition?.lastTransitionTime ?? '');
    const finishedLater = jobs
      .map((j) => sim.job(j))
      .filter((j) => j?.runnerName?.startsWith(`${SET}-canary-`) && Date.parse(j.finishTime) > rolledBackAt);
    expect(finishedLater.map((j) => j?.result)).toContain('failed');
    // A later job runs on the previous image and succeeds.
    const after = sim.enqueueJob({ scaleSetId }).jobId;
    await waitFor(() => sim.job(after)?.result === 'succeeded', {
      description: 'a job after the roll-back to succeed',
      timeoutMs: 120_000,
    });
    expect((await app!.get('/metrics')).body).toMatch(
      /aro_canary_verdicts_total\{[^}]*verdict="rolled_back"[^}]*\} 1/,
    );
  });

  it('promotes a change whose jobs succeed, and every runner moves to it', async () => {
    await setImage(NEXT);
    await waitFor(
      async () => (await runnerSets()).find((s) => imageOf(s) === NEXT && s.metadata?.name !== SET),
      { description: 'the canary EphemeralRunnerSet with the next image', timeoutMs: 60_000 },
    );
    const jobs = await feedJobs(
      async () => (await canaryCondition())?.reason === CanaryReasons.promoted,
      'the set to promote the change',
    );
    expect((await canaryCondition())?.message).toContain(NEXT);
    await waitFor(
      async () => {
        const sets = await runnerSets();
        return sets.length === 1 && imageOf(sets[0]) === NEXT;
      },
      { description: 'the set on the next image, the canary set gone', timeoutMs: 180_000 },
    );
    await waitFor(() => jobs.every((j) => sim.job(j)?.state === 'completed'), {
      description: 'every job fed to finish',
      timeoutMs: 120_000,
    });
    expect(jobs.map((j) => sim.job(j)?.result).filter((r) => r !== 'succeeded')).toEqual([]);
    expect(runners?.deletedDuringJob.size).toBe(0);
    expect(runners?.errors).toEqual([]);
  });

  it('keeps the canary runners within maxRunners: the set makes only the rest of the count', async () => {
    await kube.mergePatch(AutoscalingRunnerSetKind, namespace, SET, { spec: { maxRunners: 3 } });
    await waitFor(
      async () =>
        (await kube.list<AutoscalingListener>(AutoscalingListenerKind, {})).some(
          (l) => l.spec?.autoscalingRunnerSetName === SET && l.spec.maxRunners === 3,
        ) && sim.sessions().some((s) => s.scaleSetId === scaleSetId),
      { description: 'the listener on maxRunners 3, with a session', timeoutMs: 120_000 },
    );
    await setImage(LATER);
    await waitFor(
      async () => (await runnerSets()).find((s) => imageOf(s) === LATER && s.metadata?.name !== SET),
      { description: 'the canary EphemeralRunnerSet with the later image', timeoutMs: 60_000 },
    );
    await waitFor(
      async () =>
        (await kube.get<EphemeralRunnerSet>(EphemeralRunnerSetKind, namespace, SET)).metadata?.annotations?.[
          CanaryAnnotations.reserved
        ] === '2',
      { description: 'the 2 canary runners reserved on the set', timeoutMs: 30_000 },
    );
    // More jobs at once than maxRunners: the listener asks for 3 and the 2 canary runners are among them.
    const high = new HighWater(kube, namespace).start();
    const jobs = Array.from({ length: 6 }, () => sim.enqueueJob({ scaleSetId }).jobId);
    try {
      await waitFor(() => jobs.every((j) => sim.job(j)?.state === 'completed'), {
        description: 'the six jobs to finish',
        timeoutMs: 240_000,
      });
    } finally {
      high.stop();
    }
    console.log(`canary within maxRunners 3: at most ${high.runners} live runners (${high.samples} samples)`);
    expect(high.samples).toBeGreaterThan(10);
    expect(high.runners).toBeLessThanOrEqual(3);
    expect(jobs.map((j) => sim.job(j)?.result).filter((r) => r !== 'succeeded')).toEqual([]);
  });

  it('deletes the canary set with the AutoscalingRunnerSet, before the scale set goes from the service', async () => {
    await setImage(GOOD);
    const canarySet = await waitFor(
      async () => (await runnerSets()).find((s) => imageOf(s) === GOOD && s.metadata?.name !== SET),
      { description: 'a canary EphemeralRunnerSet for the change back', timeoutMs: 60_000 },
    );
    await waitFor(
      () => sim.registrations().filter((r) => r.name.startsWith(canarySet.metadata?.name ?? '')).length > 0,
      { description: 'a canary runner registered on the service', timeoutMs: 60_000 },
    );
    await kube.delete(AutoscalingRunnerSetKind, namespace, SET);
    // Each look: was the scale set gone from the service while a canary set was still there?
    let scaleSetGoneFirst = false;
    await waitFor(
      async () => {
        const canaryLeft = (await runnerSets()).some((s) => s.metadata?.name === canarySet.metadata?.name);
        if (canaryLeft && !sim.scaleSet(scaleSetId)) scaleSetGoneFirst = true;
        return !canaryLeft && !sim.scaleSet(scaleSetId);
      },
      { description: 'the canary set and the scale set gone', timeoutMs: 120_000, intervalMs: 100 },
    );
    expect(scaleSetGoneFirst).toBe(false);
    expect(await runnerSets()).toEqual([]);
    await waitFor(() => sim.registrations().filter((r) => r.name.startsWith(`${SET}-`)).length === 0, {
      description: 'no runner of the set left registered on the service',
      timeoutMs: 60_000,
    });
    expect(runners?.deletedDuringJob.size).toBe(0);
  });
});
