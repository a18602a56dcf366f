import type { V1Pod } from '@kubernetes/client-node';
import { EphemeralRunner, EphemeralRunnerKind } from '@aro/api';
import { KubeClient, PodKind } from '@aro/kube';
import {
  FAKE_NODE_NAME,
  createTestNamespace,
  itWithGarbageCollector,
  readOrUndefined,
  runnerContainerRunning,
  testKubeConfig,
  waitFor,
} from '../../harness';

/*
 * The garbage collector is the backstop for a runner pod whose EphemeralRunner went without deleting
 * it: the pod's controller reference names the runner. These prove that kube-controller-manager in the
 * harness does cascade from the custom kind, for a pod that existed before the runner went and for one
 * created after (a create in flight when the runner's cleanup looked): a bound, live pod then gets its
 * deletionTimestamp, and only a kubelet (the players) finishes it.
 */
describe('garbage collection of runner pods by their EphemeralRunner', () => {
  const kube = new KubeClient(testKubeConfig());
  afterAll(() => kube.close());

  async function runner(namespace: string, name: string): Promise<EphemeralRunner> {
    return kube.create<EphemeralRunner>(EphemeralRunnerKind, {
      metadata: { name, namespace },
      spec: {
        githubConfigUrl: 'https://github.com/example-org',
        githubConfigSecret: 'gh',
        runnerScaleSetId: 1,
        spec: { containers: [{ name: 'runner', image: 'ghcr.io/actions/actions-runner:latest' }] },
      },
    } as EphemeralRunner);
  }

  async function ownedPod(owner: EphemeralRunner, name = owner.metadata!.name!): Promise<V1Pod> {
    return kube.create<V1Pod>(PodKind, {
      metadata: {
        name,
        namespace: owner.metadata!.namespace,
        ownerReferences: [
          {
            apiVersion: 'actions.github.com/v1alpha1',
            kind: 'EphemeralRunner',
            name: owner.metadata!.name!,
            uid: owner.metadata!.uid!,
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      // Bound from the start, as a scheduled pod is: a bound, live pod is deleted gracefully and stays
      // with its deletionTimestamp until a kubelet finishes it (an unbound one goes at once).
      spec: {
        nodeName: FAKE_NODE_NAME,
        containers: [{ name: 'runner', image: 'ghcr.io/actions/actions-runner:latest' }],
      },
    });
  }

  async function deletionStarted(namespace: string, name: string): Promise<boolean> {
    const pod = await readOrUndefined(() => kube.get<V1Pod>(PodKind, namespace, name));
    return pod === undefined || pod.metadata?.deletionTimestamp !== undefined;
  }

  itWithGarbageCollector('deletes a live runner pod once its runner is gone', async () => {
    const namespace = await createTestNamespace('gc-runner');
    const owner = await runner(namespace, 'r1');
    await ownedPod(owner);
    await runnerContainerRunning(namespace, 'r1');
    await kube.delete(EphemeralRunnerKind, namespace, 'r1');
    // Within a second once the collector watches the kind, from the first test of a run on: it
    // watches what discovery shows when it starts, so the CRDs are installed before it (20 s measured
    // the other way round). The bound is that second with room, at the run's time scale.
    await waitFor(() => deletionStarted(namespace, 'r1'), {
      description: `the garbage collector to delete pod ${namespace}/r1 after its runner`,
      timeoutMs: 5_000,
      intervalMs: 250,
    });
  });

  itWithGarbageCollector('deletes a runner pod created after its runner was gone', async () => {
    const namespace = await createTestNamespace('gc-runner');
    const owner = await runner(namespace, 'r2');
    await kube.delete(EphemeralRunnerKind, namespace, 'r2');
    await waitFor(
      async () => !(await readOrUndefined(() => kube.get(EphemeralRunnerKind, namespace, 'r2'))),
      { description: `runner ${namespace}/r2 gone` },
    );
    await ownedPod(owner);
    await runnerContainerRunning(namespace, 'r2');
    await waitFor(() => deletionStarted(namespace, 'r2'), {
      description: `the garbage collector to delete pod ${namespace}/r2, whose runner was gone before it`,
      timeoutMs: 5_000,
      intervalMs: 250,
    });
  });
});
