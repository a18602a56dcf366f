import type { V1Pod } from '@kubernetes/client-node';
import { KubeClient, PodKind } from '@aro/kube';
import { RunnerPlayer, createTestNamespace, readOrUndefined, testKubeConfig, waitFor } from '../../harness';
import {
  RUNNER_CONTAINER,
  runnerContainerRunning,
  runnerContainerTerminated,
} from '../../harness/pod-lifecycle';

/*
 * Found by `npm run chaos -- --seed 13 --jobs 25 --max-runners 5 --duration 1 --faults 2-3` (a freeze of
 * the apiserver, the leader killed, the scale set deleted on the service): after the uninstall two
 * runner pods were left for good, phase Failed, with a deletionTimestamp, no finalizer, their
 * EphemeralRunner gone. Their runners had found no registration and exited 1; the pods were deleted
 * while still Running and marked Failed right after (the runner's last status write racing the
 * delete). A graceful deletion of a bound pod waits for the kubelet's confirmation, and the runner
 * player, the kubelet here, looked at a pod only until its runner ended: nobody confirmed. A kubelet
 * finishes the deletion of every pod of its node; so does the player now.
 */
describe('RunnerPlayer as the kubelet', () => {
  const kube = new KubeClient(testKubeConfig());
  afterAll(() => kube.close());

  it('finishes the deletion of a pod deleted while it ran and marked ended afterwards', async () => {
    const namespace = await createTestNamespace('kubelet');
    const name = 'ended-while-deleted';
    await kube.create<V1Pod>(PodKind, {
      metadata: { name, namespace },
      spec: { restartPolicy: 'Never', containers: [{ name: RUNNER_CONTAINER, image: 'runner:test' }] },
    });
    await runnerContainerRunning(namespace, name);
    await kube.delete(PodKind, namespace, name); // graceful: the pod stays, deleting, until confirmed
    await runnerContainerTerminated(namespace, name, 1);
    const shape = await kube.get<V1Pod>(PodKind, namespace, name);
    expect(shape.status?.phase).toBe('Failed');
    expect(shape.metadata?.deletionTimestamp).toBeDefined();

    const player = new RunnerPlayer({
      kubeConfig: testKubeConfig(),
      namespace,
      service: {
        runnerConnected: () => undefined,
        runner: () => undefined,
        job: () => undefined,
        startJob: () => undefined,
        completeJob: () => undefined,
        runnerExited: () => undefined,
      },
      pollIntervalMs: 100,
    }).start();
    try {
      await waitFor(
        async () => (await readOrUndefined(() => kube.get<V1Pod>(PodKind, namespace, name))) === undefined,
        {
          description: 'the player to finish the deletion',
          timeoutMs: 30_000,
        },
      );
      expect(player.errors).toEqual([]);
    } finally {
      await player.stop();
    }
  });

  /*
   * Found by `npm run chaos -- --seed 10 --jobs 25 --max-runners 5 --duration 1 --faults 2-3`: the
   * apiserver killed a moment after a runner pod was made; the player could not bind it and gave the
   * pod up, which stayed Pending, its runner New, for minutes. A kubelet retries a pod it could not
   * start; so does the player now. A scheduling gate makes the binding fail here as the outage did.
   */
  it('takes a pod it could not start on again at its next look', async () => {
    const namespace = await createTestNamespace('kubelet');
    const name = 'bind-refused-first';
    await kube.create<V1Pod>(PodKind, {
      metadata: { name, namespace },
      spec: {
        restartPolicy: 'Never',
        schedulingGates: [{ name: 'chaos.aro.dev/hold' }],
        containers: [{ name: RUNNER_CONTAINER, image: 'runner:test' }],
      },
    });
    const lines: string[] = [];
    const player = new RunnerPlayer({
      kubeConfig: testKubeConfig(),
      namespace,
      service: {
        runnerConnected: () => undefined,
        runner: () => undefined,
        job: () => undefined,
        startJob: () => undefined,
        completeJob: () => undefined,
        runnerExited: () => undefined,
      },
      pollIntervalMs: 100,
      log: (line) => lines.push(line),
    }).start();
    try {
      await waitFor(() => lines.some((l) => l.includes(`${name}: could not start its pod`)), {
        description: 'the player to try the gated pod and fail to bind it',
        timeoutMs: 30_000,
      });
      await kube.mergePatch<V1Pod>(PodKind, namespace, name, { spec: { schedulingGates: [] } });
      const started = await waitFor(
        async () => {
          const pod = await kube.get<V1Pod>(PodKind, namespace, name);
          return pod.spec?.nodeName && pod.status?.phase !== 'Pending' ? pod : undefined;
        },
        { description: 'the player to bind and run the pod once the gate is gone', timeoutMs: 30_000 },
      );
      // No registration on the (stand-in) service: the runner exits 1, as a real one would.
      expect(started.spec?.nodeName).toBeDefined();
    } finally {
      await player.stop();
    }
  });
});
