import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
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
  ScaleSetConditionTypes,
  ScaleSetReasons,
} from '@aro/api';
import {
  KubeClient,
  PodKind,
  RoleBindingKind,
  RoleKind,
  SecretKind,
  ServiceAccountKind,
  type KubeObject,
} from '@aro/kube';
import { DEFAULT_PAT, RunningSimulator, startSimulator } from '../../../apps/simulator/src';
import type { JobView } from '../../../apps/simulator/src';
import { createTestNamespace, percentile, testKubeConfig, waitFor } from '../../harness';
import { HighWater } from '../../harness/high-water';
import { ListenerPlayer } from '../../harness/listener-player';
import { RunnerPlayer } from '../../harness/runner-player';
import { SharedListenerReplicas } from '../../harness/shared-listener-replicas';
import { BootedApp, bootControllerApp } from '../controller-app/boot';
import { serviceAccountKubeconfig } from '../charts/install';
import { sharedListenerChart } from './shared-listener-chart';

/*
 * The whole of scale-set mode: AutoscalingRunnerSet -> (controller) scale set, EphemeralRunnerSet,
 * AutoscalingListener -> listener pod -> (this file's listener player) the real listener process ->
 * EphemeralRunnerSet patches -> (controller) EphemeralRunners -> runner pods -> (this file's runner
 * player) runners that take their job on the simulator, run it for a moment and exit 0.
 *
 * In both listener modes, the same scenarios: `pod`, a listener pod per scale set; `shared`, no pod, the
 * chart's shared listener Deployment (two replicas, played as processes with its container's env) as
 * the chart's service account, so every right it uses is the chart's Role or the set's listener Role
 * the controller bound to it.
 */
const MAX_RUNNERS = 10;
const JOBS = 50;
describe.each(['pod', 'shared'] as const)('Scale-set mode end to end, listener mode %s', (mode) => {
  jest.setTimeout(600_000);
  let sim: RunningSimulator;
  let kube: KubeClient;
  let controllerNamespace: string;
  /** Where every test's scale set lives, each under its own name: the one namespace the controller watches. */
  let namespace: string;
  let app: BootedApp | undefined;
  let listeners: ListenerPlayer | undefined;
  let shared: SharedListenerReplicas | undefined;
  let sharedConfigSecret = '';
  let workDir: string | undefined;
  let kubeconfigDir: string | undefined;
  const perTest: Array<{ stop(): unknown }> = [];

  beforeAll(async () => {
    sim = await startSimulator({
      seed: { timing: { longPollTimeoutMs: 2_000, autoStartJobs: true, sessionIdleTimeoutMs: 10_000 } },
    });
    kube = new KubeClient(testKubeConfig());
    controllerNamespace = await createTestNamespace(`e2e-system-${mode}`);
    namespace = await createTestNamespace(`e2e-${mode}`);
    await kube.create<V1Secret>(SecretKind, {
      metadata: { name: 'gh', namespace },
      stringData: { github_token: DEFAULT_PAT },
    });
    let modeEnv: Record<string, string> = {};
    if (mode === 'shared') {
      // `helm install` of the controller chart with listener.mode shared, as far as the listener goes:
      // its account and the Role to get its configs Secret.
      const chart = await sharedListenerChart(controllerNamespace);
      const kinds = { ServiceAccount: ServiceAccountKind, Role: RoleKind, RoleBinding: RoleBindingKind };
      for (const object of chart.objects) {
        await kube.create<KubeObject>(kinds[object.kind as keyof typeof kinds], object as KubeObject);
      }
      modeEnv = chart.controllerEnv;
      sharedConfigSecret = chart.controllerEnv.LISTENER_SHARED_CONFIG_SECRET;
      workDir = mkdtempSync(join(tmpdir(), 'aro-e2e-shared-'));
      const sharedKubeconfig = await serviceAccountKubeconfig(
        controllerNamespace,
        chart.controllerEnv.LISTENER_SHARED_SERVICE_ACCOUNT,
      );
      // Its folder goes with the file's other temporary folder.
      kubeconfigDir = dirname(sharedKubeconfig);
      shared = await new SharedListenerReplicas({
        container: chart.container,
        kubeconfigPath: sharedKubeconfig,
        replicas: chart.replicas,
        prefix: 'shared-listener',
        logDir: workDir,
        // The chart's 10 s, shortened: a new scale set is served within one rescan.
        env: { LISTENER_RESCAN_SECONDS: '2', LOG_LEVEL: 'debug' },
      }).start();
    }
    // One controller for the whole file, as in a cluster, watching this file's namespace only: on the
    // suites' shared control plane a controller watching every namespace adopts what other suites
    // write there (the takeover test's upstream listener got its ServiceAccount from this one, and
    // its upstream runners lost their registrations).
    app = await bootControllerApp({
      WATCH_NAMESPACE: namespace,
      LEADER_ELECTION: 'false',
      POD_NAMESPACE: controllerNamespace,
      // The image listener pods get; the listener player runs the listener from source whatever it says.
      CONTROLLER_MANAGER_CONTAINER_IMAGE: 'aro:test',
      ...modeEnv,
    });
    if (mode === 'pod') listeners = ListenerPlayer.start({ namespace: controllerNamespace });
  });
  afterEach(async () => {
    for (const p of perTest.splice(0)) await p.stop();
  });
  afterAll(async () => {
    await listeners?.stop();
    await shared?.stop();
    if (workDir) rmSync(workDir, { recursive: true, force: true });
    if (kubeconfigDir) rmSync(kubeconfigDir, { recursive: true, force: true });
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
      ...(shared ? [shared.logs()] : []),
      ...(listeners?.history ?? []).map(
        (h) =>
          `process of ${h.pod} uid=${h.uid} exit=${h.exitCode} signal=${h.signal}\n${ListenerPlayer.tail(h)}`,
      ),
    ].join('\n');
  }

  /**
   * The runner pods played and an AutoscalingRunnerSet of its own whose listener has opened its session.
   * The scale set is found by the id the controller recorded on the AutoscalingRunnerSet.
   */
  async function setUp(name: string) {
    // The scale set is named after the AutoscalingRunnerSet, and the service knows one scale set per
    // name in a runner group: two tests both calling theirs `arc` would share it.
    const arsName = `arc-${name}`;
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
    ).find(
      (l) =>
        l.spec.autoscalingRunnerSetNamespace === namespace && l.spec.autoscalingRunnerSetName === arsName,
    );
    if (!listener?.metadata?.name) throw new Error(`no AutoscalingListener for ${namespace}/${arsName}`);
    if (mode === 'shared') {
      // No pod: the listener's status says which replica holds the session, as that replica told it.
      await waitFor(
        async () => {
          const live = await kube.get<AutoscalingListener>(
            AutoscalingListenerKind,
            controllerNamespace,
            listener.metadata?.name ?? '',
          );
          const running = live.status?.conditions?.find(
            (c) => c.type === ScaleSetConditionTypes.listenerRunning,
          );
          return running?.status === 'True' &&
            running.reason === ScaleSetReasons.sharedListenerSessionOpen &&
            running.message?.includes(session.ownerName)
            ? running
            : undefined;
        },
        {
          description: `${listener.metadata.name}'s status to name ${session.ownerName} as its session's holder`,
        },
      );
      const pods = await kube.list<V1Pod>(PodKind, { namespace: controllerNamespace });
      expect(pods.map((p) => p.metadata?.name)).toEqual([]);
    }
    return {
      namespace,
      arsName,
      scaleSetId,
      session,
      runners,
      highWater,
      listenerName: listener.metadata.name,
    };
  }

  it('runs 50 jobs in bursts, each on its own runner, never above maxRunners, and scales back to 0', async () => {
    const { namespace, arsName, scaleSetId, runners, highWater, listenerName } = await setUp(`e2e-${mode}`);
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
    if (mode === 'shared') {
      // The scale set goes: its key leaves the shared listener's Secret and a replica deletes its session.
      await kube.delete(AutoscalingRunnerSetKind, namespace, arsName);
      await waitFor(
        async () => {
          const secret = await kube.get<V1Secret>(SecretKind, controllerNamespace, sharedConfigSecret);
          return !(`${listenerName}.json` in (secret.data ?? {})) &&
            !sim.sessions().some((s) => s.scaleSetId === scaleSetId)
            ? true
            : undefined;
        },
        { description: 'the deleted set’s config key and session gone', timeoutMs: 120_000 },
      ).catch(async (err: unknown) => {
        throw new Error(`${(err as Error).message}\n${await listenerState()}`);
      });
    }
    process.stdout.write(
      `listener e2e (${mode}): ${JOBS} jobs, wait queued->started p50 ${percentile(waits, 50)} ms, p95 ${percentile(waits, 95)} ms, ` +
        `most live runners at once ${highWater.runners} (EphemeralRunner objects ${highWater.objects}), idle runners trimmed ${trimmed}\n`,
    );
  });

  it('carries on when the listener process is killed mid-run: a new pod, a new session, nothing lost', async () => {
    const { scaleSetId, session: first, listenerName } = await setUp(`e2e-kill-${mode}`);
    let kill: () => Promise<void>;
    if (shared) {
      // kill -9 of the replica holding the session: the other takes it once the service expires it.
      kill = () => shared!.kill(first.ownerName);
    } else {
      const victim = await waitFor(() => listeners!.running().find((l) => l.pod === listenerName), {
        description: `the listener process of pod ${listenerName}`,
        timeoutMs: 60_000,
      });
      kill = async () => listeners!.kill(victim.pod);
    }
    const before = Array.from({ length: 5 }, () => sim.enqueueJob({ scaleSetId }));
    await kill();
    const after = Array.from({ length: 5 }, () => sim.enqueueJob({ scaleSetId }));
    await waitFor(
      () => sim.sessions().some((s) => s.scaleSetId === scaleSetId && s.sessionId !== first.sessionId),
      {
        description: 'a new session from the recreated listener pod or the standby replica',
        timeoutMs: 180_000,
      },
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
    // The Deployment starts the killed pod again: it becomes the standby.
    await shared?.restartExited();
  });
});
