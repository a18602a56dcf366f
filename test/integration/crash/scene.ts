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
import { ControlPlane, createTestNamespace, readOrUndefined, testKubeConfig, waitFor } from '../../harness';

export { readOrUndefined };
import { ControllerProcess } from '../../harness/controller-process';
import { CRD_PATHS } from '../../harness/global-setup';
import { HighWater } from '../../harness/high-water';
import { ListenerPlayer } from '../../harness/listener-player';
import { RunnerPlayer } from '../../harness/runner-player';
import { scaled } from '../../harness/time-scale';

/** Jest's bound on setting a scene up (control plane, simulator, controllers), at the run's time scale. */
const SCENE_SETUP_TIMEOUT_MS = scaled(180_000);

/*
 * The stage of the crash suites: a control plane of their own (the controller watches every
 * namespace, so on the shared one it would reconcile other suites' objects, and theirs ours), the
 * simulator in-process, the controller as an OS process that a test SIGKILLs and restarts, the real
 * listener processes (ListenerPlayer) and runner pods played to their end (RunnerPlayer).
 */

/** A short lease, so that a replacement takes over from a SIGKILLed leader within seconds. */
const LEASE_ENV = {
  LEASE_DURATION_SECONDS: '4',
  RENEW_DEADLINE_SECONDS: '3',
  RETRY_PERIOD_SECONDS: '0.5',
};

export interface CrashStage {
  sim: RunningSimulator;
  kube: KubeClient;
  controller: ControllerProcess;
  controllerNamespace: string;
  listeners: ListenerPlayer;
}

export interface ScaleSetScene {
  namespace: string;
  arsName: string;
  scaleSetId: number;
  maxRunners: number;
  /** The AutoscalingListener (and its pod, of the same name) in the controller's namespace. */
  listenerName: string;
  runners: RunnerPlayer;
  highWater: HighWater;
}

/** Registers the file's hooks and returns the stage, filled in by `beforeAll`. */
export function crashStage(): CrashStage {
  const stage = {} as CrashStage;
  let plane: ControlPlane | undefined;
  const sharedEnv = {
    ARO_TEST_CONTROL_PLANE: process.env.ARO_TEST_CONTROL_PLANE,
    ARO_TEST_KUBECONFIG: process.env.ARO_TEST_KUBECONFIG,
  };
  beforeEach(() => {
    origin = Date.now();
  });
  beforeAll(async () => {
    plane = await ControlPlane.start({ crdPaths: CRD_PATHS, log: () => undefined });
    process.env.ARO_TEST_CONTROL_PLANE = plane.infoPath;
    process.env.ARO_TEST_KUBECONFIG = plane.info.kubeconfigPath;
    stage.kube = new KubeClient(testKubeConfig());
    stage.sim = await startSimulator({
      seed: { timing: { longPollTimeoutMs: 2_000, autoStartJobs: true, sessionIdleTimeoutMs: 10_000 } },
    });
    stage.controllerNamespace = await createTestNamespace('crash-system');
    stage.controller = new ControllerProcess({ namespace: stage.controllerNamespace, env: LEASE_ENV });
    stage.listeners = ListenerPlayer.start({ namespace: stage.controllerNamespace });
  }, SCENE_SETUP_TIMEOUT_MS);
  afterAll(async () => {
    await stage.listeners?.stop();
    await stage.controller?.close();
    stage.kube?.close();
    await stage.sim?.stop();
    await plane?.stop();
    for (const [key, value] of Object.entries(sharedEnv)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  });
  return stage;
}

/** Starts a controller replica (the previous one dead), `env` on top of the stage's, and waits until it leads. */
export async function startLeader(stage: CrashStage, env: Record<string, string> = {}): Promise<void> {
  const started = Date.now();
  await stage.controller.start(env);
  await stage.controller.waitLeading();
  progress(`${stage.controller.pod} leads, ${Date.now() - started} ms after its start`);
}

let origin = Date.now();

/** One line of the suite's progress, with the seconds since the test began: where the time went. */
export function progress(line: string): void {
  process.stdout.write(`[crash +${((Date.now() - origin) / 1000).toFixed(1)} s] ${line}\n`);
}

/**
 * A namespace with the credentials, its runner pods played, and an AutoscalingRunnerSet whose
 * listener has opened its session. A controller replica must lead.
 */
export async function scaleSetScene(
  stage: CrashStage,
  name: string,
  opts: { minRunners?: number; maxRunners: number; jobDurationMs?: number },
): Promise<ScaleSetScene> {
  const { kube, sim } = stage;
  const namespace = await createTestNamespace(name);
  const arsName = `arc-${name}`;
  await kube.create<V1Secret>(SecretKind, {
    metadata: { name: 'gh', namespace },
    stringData: { github_token: DEFAULT_PAT },
  });
  const runners = new RunnerPlayer({
    kubeConfig: testKubeConfig(),
    namespace,
    service: sim,
    jobDurationMs: opts.jobDurationMs ?? 500,
    // An idle runner leaves only when the listener scales it down, as a real one waits for work.
    jobWaitTimeoutMs: 600_000,
  }).start();
  const highWater = new HighWater(kube, namespace).start();
  await kube.create<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, {
    metadata: { name: arsName, namespace },
    spec: {
      githubConfigUrl: sim.configUrl({ org: 'octo' }),
      githubConfigSecret: 'gh',
      minRunners: opts.minRunners ?? 0,
      maxRunners: opts.maxRunners,
      template: {
        spec: { containers: [{ name: 'runner', image: 'ghcr.io/actions/actions-runner:latest' }] },
      },
    },
  });
  const scaleSetId = await explained(stage, () =>
    waitFor(
      async () => {
        const ars = await kube.get<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, namespace, arsName);
        const id = Number(ars.metadata?.annotations?.[Annotations.runnerScaleSetId]);
        return Number.isInteger(id) && id > 0 ? id : undefined;
      },
      { description: `the scale set id on ${namespace}/${arsName}`, timeoutMs: 60_000 },
    ),
  );
  await explained(stage, () =>
    waitFor(() => sim.sessions().some((s) => s.scaleSetId === scaleSetId), {
      description: `the listener of ${namespace}/${arsName} to open its session`,
      timeoutMs: 120_000,
    }),
  );
  progress(`${namespace}/${arsName}: scale set ${scaleSetId}, its listener's session open`);
  const listener = (
    await kube.list<AutoscalingListener>(AutoscalingListenerKind, { namespace: stage.controllerNamespace })
  ).find((l) => l.spec.autoscalingRunnerSetNamespace === namespace);
  if (!listener?.metadata?.name) throw new Error(`no AutoscalingListener for ${namespace}/${arsName}`);
  return {
    namespace,
    arsName,
    scaleSetId,
    maxRunners: opts.maxRunners,
    listenerName: listener.metadata.name,
    runners,
    highWater,
  };
}

export async function stopScene(scene: ScaleSetScene | undefined): Promise<void> {
  scene?.highWater.stop();
  await scene?.runners.stop();
}

/** `work`, its failure explained by the controller's last log lines and the scene's objects. */
export async function explained<T>(
  stage: CrashStage,
  work: () => Promise<T>,
  scene?: ScaleSetScene,
): Promise<T> {
  try {
    return await work();
  } catch (err) {
    const state = scene ? await describeScene(stage, scene).catch((e: unknown) => String(e)) : '';
    throw new Error(
      `${err instanceof Error ? err.message : String(err)}\n${state}\n` +
        `simulator calls: ${JSON.stringify(stage.sim.callCounts())}\n${stage.controller.tail(40)}`,
      { cause: err },
    );
  }
}

async function describeScene(stage: CrashStage, scene: ScaleSetScene): Promise<string> {
  const { kube, sim } = stage;
  const runners = await kube.list<EphemeralRunner>(EphemeralRunnerKind, { namespace: scene.namespace });
  const sets = await kube.list<EphemeralRunnerSet>(EphemeralRunnerSetKind, { namespace: scene.namespace });
  return [
    `runner sets: ${sets.map((s) => `${s.metadata?.name} replicas=${s.spec.replicas}${s.metadata?.deletionTimestamp ? ' deleting' : ''} finalizers=${s.metadata?.finalizers}`).join('; ')}`,
    `runners: ${runners.map((r) => `${r.metadata?.name} ${r.status?.phase ?? '-'} id=${r.status?.runnerId ?? '-'}${r.metadata?.deletionTimestamp ? ' deleting' : ''} finalizers=${r.metadata?.finalizers}`).join('; ')}`,
    `registrations: ${JSON.stringify(sim.registrations({ scaleSetId: scene.scaleSetId }))}`,
    `player errors: ${JSON.stringify(scene.runners.errors)}`,
  ].join('\n');
}

/**
 * Every job completed and succeeded, each on a runner of its own, started once: a runner killed while
 * holding its job would have failed it or had it re-queued (a second start attempt).
 */
export async function expectJobsSucceededOnce(
  stage: CrashStage,
  scene: ScaleSetScene,
  jobs: JobView[],
  timeoutMs = 150_000,
): Promise<JobView[]> {
  const { sim } = stage;
  await explained(
    stage,
    () =>
      waitFor(() => jobs.every((j) => sim.job(j.jobId)?.state === 'completed'), {
        description: `all ${jobs.length} jobs completed`,
        timeoutMs,
        intervalMs: 500,
      }),
    scene,
  );
  progress(`all ${jobs.length} jobs completed`);
  const done = jobs.map((j) => sim.job(j.jobId)!);
  expect(done.filter((j) => j.result !== 'succeeded')).toEqual([]);
  expect(new Set(done.map((j) => j.runnerName)).size).toBe(jobs.length);
  expect(done.filter((j) => j.startAttempts !== 1)).toEqual([]);
  expect(scene.runners.errors).toEqual([]);
  return done;
}

/** What is left in the scene's namespace of the runners: objects, pods, and secrets other than `gh`. */
async function runnerLeftovers(stage: CrashStage, namespace: string): Promise<string[]> {
  const { kube } = stage;
  const [runners, pods, secrets] = await Promise.all([
    kube.list<EphemeralRunner>(EphemeralRunnerKind, { namespace }),
    kube.list<V1Pod>(PodKind, { namespace }),
    kube.list<V1Secret>(SecretKind, { namespace }),
  ]);
  return [
    ...runners.map((r) => `EphemeralRunner ${r.metadata?.name}`),
    ...pods.map((p) => `Pod ${p.metadata?.name}`),
    ...secrets.filter((s) => s.metadata?.name !== 'gh').map((s) => `Secret ${s.metadata?.name}`),
  ];
}

/**
 * Once the jobs are done the listener scales the set to 0: then no runner object, pod or secret is
 * left, and no registration of the scale set on the service.
 */
export async function expectScaledToZeroClean(stage: CrashStage, scene: ScaleSetScene): Promise<void> {
  const { kube, sim } = stage;
  await explained(
    stage,
    () =>
      waitFor(
        async () => {
          const sets = await kube.list<EphemeralRunnerSet>(EphemeralRunnerSetKind, {
            namespace: scene.namespace,
          });
          return (
            sets[0]?.spec.replicas === 0 &&
            (await runnerLeftovers(stage, scene.namespace)).length === 0 &&
            sim.registrations({ scaleSetId: scene.scaleSetId }).length === 0
          );
        },
        {
          description: 'the set scaled to 0, no runner, pod, secret or registration left',
          timeoutMs: 90_000,
        },
      ),
    scene,
  );
  progress('scaled to 0, nothing left');
  expect(sim.registrations({ scaleSetId: scene.scaleSetId })).toEqual([]);
  expect(await runnerLeftovers(stage, scene.namespace)).toEqual([]);
}

/** The bound maxRunners held at every sample (live runners and live runner pods). */
export function expectNeverAboveMax(scene: ScaleSetScene): void {
  expect(scene.highWater.samples).toBeGreaterThan(10);
  expect(scene.highWater.runners).toBeLessThanOrEqual(scene.maxRunners);
  expect(scene.highWater.pods).toBeLessThanOrEqual(scene.maxRunners);
}

/**
 * After the AutoscalingRunnerSet was deleted: it is gone (its finalizer removed), the scale set is
 * deleted on the service with no registration left, and nothing it made is left: runner set,
 * runners, pods, secrets, the listener and its pod.
 */
export async function expectDeletedClean(stage: CrashStage, scene: ScaleSetScene): Promise<void> {
  const { kube, sim } = stage;
  await explained(
    stage,
    () =>
      waitFor(
        async () =>
          (await readOrUndefined(() =>
            kube.get<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, scene.namespace, scene.arsName),
          )) === undefined,
        { description: `${scene.namespace}/${scene.arsName} deleted (finalizer removed)`, timeoutMs: 90_000 },
      ),
    scene,
  );
  progress(`${scene.namespace}/${scene.arsName} deleted`);
  expect(sim.scaleSet(scene.scaleSetId)).toBeUndefined();
  expect(sim.registrations({ scaleSetId: scene.scaleSetId })).toEqual([]);
  expect(await kube.list<EphemeralRunnerSet>(EphemeralRunnerSetKind, { namespace: scene.namespace })).toEqual(
    [],
  );
  // Runner pods end as their objects go; the listener's objects live in the controller's namespace.
  await explained(
    stage,
    () =>
      waitFor(async () => (await runnerLeftovers(stage, scene.namespace)).length === 0, {
        description: 'no runner, pod or secret left',
        timeoutMs: 60_000,
      }),
    scene,
  );
  const ns = stage.controllerNamespace;
  expect(
    await readOrUndefined(() =>
      kube.get<AutoscalingListener>(AutoscalingListenerKind, ns, scene.listenerName),
    ),
  ).toBeUndefined();
  expect(await readOrUndefined(() => kube.get<V1Pod>(PodKind, ns, scene.listenerName))).toBeUndefined();
}

/**
 * Polls `moment` (every `intervalMs`, one look at a time) and SIGKILLs the controller as soon as it
 * answers something, then resolves with that answer once the process is gone. The kill is sent from
 * the same turn of the event loop that saw the moment, so the controller gets no further than the
 * requests it already had in flight.
 */
export async function killAt<T>(
  stage: CrashStage,
  description: string,
  moment: () => T | undefined | Promise<T | undefined>,
  opts: { intervalMs: number; timeoutMs: number },
): Promise<T> {
  const deadline = Date.now() + opts.timeoutMs;
  for (;;) {
    const seen = await moment();
    if (seen !== undefined && seen !== false) {
      await stage.controller.kill();
      return seen;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${opts.timeoutMs} ms waiting for ${description}\n${stage.controller.tail(30)}`,
      );
    }
    if (!stage.controller.running) throw new Error(`the controller exited before ${description}`);
    await new Promise((r) => setTimeout(r, opts.intervalMs));
  }
}
