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
} from '@aro/api';
import {
  KubeClient,
  type KubeObject,
  PodKind,
  RoleBindingKind,
  RoleKind,
  SecretKind,
  ServiceAccountKind,
} from '@aro/kube';
import { DEFAULT_PAT, RunningSimulator, startSimulator } from '../../../apps/simulator/src';
import { createTestNamespace, testKubeConfig, waitFor } from '../../harness';
import { ListenerPlayer } from '../../harness/listener-player';
import { RunnerPlayer } from '../../harness/runner-player';
import { SharedListenerReplicas } from '../../harness/shared-listener-replicas';
import { scaled } from '../../harness/time-scale';
import { BootedApp, bootControllerApp } from '../controller-app/boot';
import { serviceAccountKubeconfig } from '../charts/install';
import { sharedListenerChart } from './shared-listener-chart';

jest.setTimeout(scaled(300_000));

/*
 * `helm upgrade` of the controller chart from `listener.mode: pod` to `shared` under a live scale set:
 * the controller restarts with the shared env, the chart's shared listener Deployment starts. The
 * per-pod listener still holds the set's message session; left running, it and the shared listener
 * would take turns being refused (409) for ever. The AutoscalingListener controller deletes the pod
 * (libs/controllers/src/autoscaling-listener/listener-shared-path.ts), whose listener deletes its
 * session on SIGTERM, and the shared listener takes the set over.
 */
describe('Switching a live scale set from per-pod to shared listener mode', () => {
  let sim: RunningSimulator;
  const kube = new KubeClient(testKubeConfig());
  let app: BootedApp | undefined;
  let listeners: ListenerPlayer | undefined;
  let shared: SharedListenerReplicas | undefined;
  let runners: RunnerPlayer | undefined;
  let workDir: string | undefined;
  let kubeconfigDir: string | undefined;

  beforeAll(async () => {
    sim = await startSimulator({
      seed: { timing: { longPollTimeoutMs: 2_000, autoStartJobs: true, sessionIdleTimeoutMs: 10_000 } },
    });
  });
  afterAll(async () => {
    await runners?.stop();
    await listeners?.stop();
    await shared?.stop();
    await app?.close();
    if (workDir) rmSync(workDir, { recursive: true, force: true });
    if (kubeconfigDir) rmSync(kubeconfigDir, { recursive: true, force: true });
    kube.close();
    await sim?.stop();
  });

  it('leaves exactly one listener holding the session: the per-pod listener pod and its config Secret go, and jobs are served', async () => {
    const controllerNamespace = await createTestNamespace('switch-system');
    const namespace = await createTestNamespace('switch');
    await kube.create<V1Secret>(SecretKind, {
      metadata: { name: 'gh', namespace },
      stringData: { github_token: DEFAULT_PAT },
    });
    const controllerEnv = {
      WATCH_NAMESPACE: namespace,
      LEADER_ELECTION: 'false',
      POD_NAMESPACE: controllerNamespace,
      CONTROLLER_MANAGER_CONTAINER_IMAGE: 'aro:test',
    };
    runners = new RunnerPlayer({
      kubeConfig: testKubeConfig(),
      namespace,
      service: sim,
      jobDurationMs: 300,
      jobWaitTimeoutMs: 600_000,
    }).start();

    // Per-pod mode, the default: the set's listener runs in a pod of its own and opens the session.
    app = await bootControllerApp(controllerEnv);
    listeners = ListenerPlayer.start({ namespace: controllerNamespace });
    await kube.create<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, {
      metadata: { name: 'arc-switch', namespace },
      spec: {
        githubConfigUrl: sim.configUrl({ org: 'octo' }),
        githubConfigSecret: 'gh',
        minRunners: 0,
        maxRunners: 5,
        template: {
          spec: { containers: [{ name: 'runner', image: 'ghcr.io/actions/actions-runner:latest' }] },
        },
      },
    });
    const scaleSetId = await waitFor(
      async () => {
        const ars = await kube.get<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, namespace, 'arc-switch');
        const id = Number(ars.metadata?.annotations?.[Annotations.runnerScaleSetId]);
        return Number.isInteger(id) && id > 0 ? id : undefined;
      },
      { description: 'the scale set id', timeoutMs: 60_000 },
    );
    const sessions = () => sim.sessions().filter((s) => s.scaleSetId === scaleSetId);
    const listenerPod = await waitFor(
      async () =>
        (await kube.list<AutoscalingListener>(AutoscalingListenerKind, { namespace: controllerNamespace }))[0]
          ?.metadata?.name,
      { description: 'the AutoscalingListener (its pod is named after it)', timeoutMs: 60_000 },
    );
    const podSession = await waitFor(() => sessions().find((s) => s.ownerName === listenerPod), {
      description: `the per-pod listener ${listenerPod} to open the session`,
      timeoutMs: 120_000,
    });
    const before = Array.from({ length: 2 }, () => sim.enqueueJob({ scaleSetId }));
    await waitFor(() => before.every((j) => sim.job(j.jobId)?.result === 'succeeded'), {
      description: 'the jobs before the switch succeeded',
      timeoutMs: 120_000,
    });

    // helm upgrade to listener.mode shared: the shared listener's objects and Deployment, and the
    // controller restarted with the shared env. The per-pod listener pod still runs meanwhile.
    const chart = await sharedListenerChart(controllerNamespace);
    const kinds = { ServiceAccount: ServiceAccountKind, Role: RoleKind, RoleBinding: RoleBindingKind };
    for (const object of chart.objects) {
      await kube.create<KubeObject>(kinds[object.kind as keyof typeof kinds], object as KubeObject);
    }
    workDir = mkdtempSync(join(tmpdir(), 'aro-mode-switch-'));
    const sharedKubeconfig = await serviceAccountKubeconfig(
      controllerNamespace,
      chart.controllerEnv.LISTENER_SHARED_SERVICE_ACCOUNT,
    );
    kubeconfigDir = dirname(sharedKubeconfig);
    await app.close();
    app = await bootControllerApp({ ...controllerEnv, ...chart.controllerEnv });
    shared = await new SharedListenerReplicas({
      container: chart.container,
      kubeconfigPath: sharedKubeconfig,
      replicas: chart.replicas,
      prefix: 'shared-listener',
      logDir: workDir,
      env: { LISTENER_RESCAN_SECONDS: '2' },
    }).start();
    const replicaNames = shared.replicas.map((r) => r.name);
    const switchedAt = Date.now();

    const state = async () => {
      const pods = await kube.list<V1Pod>(PodKind, { namespace: controllerNamespace });
      return `pods: ${pods.map((p) => p.metadata?.name).join(', ') || 'none'}; sessions: ${JSON.stringify(sessions())}\n${shared?.logs()}`;
    };
    const held = await waitFor(
      async () => {
        const pod = await kube.list<V1Pod>(PodKind, { namespace: controllerNamespace });
        const now = sessions();
        return pod.length === 0 && now.length === 1 && replicaNames.includes(now[0].ownerName)
          ? now[0]
          : undefined;
      },
      {
        description: 'the per-pod listener pod gone and a shared replica holding the session',
        timeoutMs: 120_000,
      },
    ).catch(async (err: unknown) => {
      throw new Error(`${(err as Error).message}\n${await state()}`);
    });
    console.log(
      `mode switch: ${held.ownerName} holds the session ${Date.now() - switchedAt} ms after the switch (the per-pod session was ${podSession.sessionId})`,
    );
    expect(listeners.running().filter((l) => l.pod === listenerPod)).toEqual([]);

    // Jobs after the switch are served by the shared listener, and it alone holds the session.
    const after = Array.from({ length: 3 }, () => sim.enqueueJob({ scaleSetId }));
    await waitFor(() => after.every((j) => sim.job(j.jobId)?.result === 'succeeded'), {
      description: 'the jobs after the switch succeeded',
      timeoutMs: 120_000,
    }).catch(async (err: unknown) => {
      throw new Error(`${(err as Error).message}\n${await state()}`);
    });
    expect(sessions().map((s) => s.sessionId)).toEqual([held.sessionId]);
    expect(await kube.list<V1Pod>(PodKind, { namespace: controllerNamespace })).toEqual([]);
    // Nor is the per-pod listener's copy of the credentials left behind: its config Secret went with it.
    const secrets = await kube.list<V1Secret>(SecretKind, { namespace: controllerNamespace });
    expect(secrets.map((x) => x.metadata?.name)).toEqual([chart.controllerEnv.LISTENER_SHARED_CONFIG_SECRET]);
  });
});
