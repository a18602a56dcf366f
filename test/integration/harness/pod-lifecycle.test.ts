import { ApiException, CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import {
  FAKE_NODE_NAME,
  createTestNamespace,
  finishPodDeletion,
  initContainerFailed,
  nodeLost,
  podEvicted,
  podScheduledAndStarting,
  runnerContainerRunning,
  runnerContainerTerminated,
  testKubeConfig,
} from '../../harness';

jest.setTimeout(60_000);

const api = testKubeConfig().makeApiClient(CoreV1Api);

async function createRunnerPod(
  namespace: string,
  extra: { sidecar?: boolean; init?: boolean; nativeSidecar?: boolean } = {},
): Promise<string> {
  const name = 'runner-pod';
  await api.createNamespacedPod({
    namespace,
    body: {
      metadata: { name },
      spec: {
        restartPolicy: 'Never',
        initContainers: [
          ...(extra.init ? [{ name: 'setup', image: 'busybox' }] : []),
          ...(extra.nativeSidecar ? [{ name: 'dind', image: 'docker:dind', restartPolicy: 'Always' }] : []),
        ],
        containers: [
          { name: 'runner', image: 'ghcr.io/actions/actions-runner:latest' },
          ...(extra.sidecar ? [{ name: 'sidecar', image: 'busybox' }] : []),
        ],
      },
    },
  });
  return name;
}

function stateOf(pod: V1Pod, container: string): string {
  const status = [
    ...(pod.status?.initContainerStatuses ?? []),
    ...(pod.status?.containerStatuses ?? []),
  ].find((s) => s.name === container);
  const state = status?.state;
  if (state?.terminated) {
    return `terminated:${state.terminated.exitCode}`;
  }
  return state?.running ? 'running' : state?.waiting ? `waiting:${state.waiting.reason}` : 'none';
}

async function read(namespace: string, name: string): Promise<V1Pod> {
  return api.readNamespacedPod({ namespace, name });
}

describe('the pod-lifecycle player (the kubelet stand-in)', () => {
  it('binds a pod and shows it Pending with containers being created', async () => {
    const namespace = await createTestNamespace('pods');
    const name = await createRunnerPod(namespace);
    await podScheduledAndStarting(namespace, name);
    const pod = await read(namespace, name);
    expect(pod.spec?.nodeName).toBe(FAKE_NODE_NAME);
    expect(pod.status?.phase).toBe('Pending');
    expect(stateOf(pod, 'runner')).toBe('waiting:ContainerCreating');
    expect(pod.status?.conditions?.find((c) => c.type === 'PodScheduled')?.status).toBe('True');
  });

  it('runs the runner container, ready or not', async () => {
    const namespace = await createTestNamespace('pods');
    const name = await createRunnerPod(namespace, { init: true, nativeSidecar: true });
    await runnerContainerRunning(namespace, name, { ready: false });
    let pod = await read(namespace, name);
    expect(pod.status?.phase).toBe('Running');
    expect(pod.status?.podIP).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    expect(stateOf(pod, 'setup')).toBe('terminated:0');
    expect(stateOf(pod, 'dind')).toBe('running');
    expect(pod.status?.containerStatuses?.find((s) => s.name === 'runner')?.ready).toBe(false);
    expect(pod.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('False');

    await runnerContainerRunning(namespace, name);
    pod = await read(namespace, name);
    expect(pod.status?.containerStatuses?.find((s) => s.name === 'runner')?.ready).toBe(true);
    expect(pod.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
  });

  it('derives Succeeded from a runner exit 0 and stops native sidecars', async () => {
    const namespace = await createTestNamespace('pods');
    const name = await createRunnerPod(namespace, { nativeSidecar: true });
    await runnerContainerRunning(namespace, name);
    await runnerContainerTerminated(namespace, name, 0);
    const pod = await read(namespace, name);
    expect(pod.status?.phase).toBe('Succeeded');
    expect(stateOf(pod, 'runner')).toBe('terminated:0');
    expect(stateOf(pod, 'dind')).toBe('terminated:0');
  });

  it('keeps the pod Running after a runner exit 7 while a regular sidecar still runs, unless told the phase', async () => {
    const namespace = await createTestNamespace('pods');
    const name = await createRunnerPod(namespace, { sidecar: true });
    await runnerContainerRunning(namespace, name);
    await runnerContainerTerminated(namespace, name, 7);
    let pod = await read(namespace, name);
    expect(pod.status?.phase).toBe('Running');
    expect(stateOf(pod, 'runner')).toBe('terminated:7');
    expect(pod.status?.containerStatuses?.find((s) => s.name === 'runner')?.state?.terminated?.reason).toBe(
      'Error',
    );
    expect(stateOf(pod, 'sidecar')).toBe('running');

    await runnerContainerTerminated(namespace, name, 7, { phase: 'Failed', reason: 'Error' });
    pod = await read(namespace, name);
    expect(pod.status?.phase).toBe('Failed');
    expect(pod.status?.reason).toBe('Error');
  });

  it('fails an init container with its exit code and leaves the containers waiting', async () => {
    const namespace = await createTestNamespace('pods');
    const name = await createRunnerPod(namespace, { init: true });
    await initContainerFailed(namespace, name, { exitCode: 3 });
    const pod = await read(namespace, name);
    expect(pod.status?.phase).toBe('Failed');
    expect(stateOf(pod, 'setup')).toBe('terminated:3');
    expect(stateOf(pod, 'runner')).toBe('waiting:PodInitializing');
  });

  it('shows a lost node as phase Failed while the runner still looks running', async () => {
    const namespace = await createTestNamespace('pods');
    const name = await createRunnerPod(namespace);
    await runnerContainerRunning(namespace, name);
    await nodeLost(namespace, name);
    const pod = await read(namespace, name);
    expect(pod.status?.phase).toBe('Failed');
    expect(pod.status?.reason).toBe('NodeLost');
    expect(stateOf(pod, 'runner')).toBe('running');
  });

  it('shows an eviction as phase Failed, reason Evicted, runner killed with 137', async () => {
    const namespace = await createTestNamespace('pods');
    const name = await createRunnerPod(namespace);
    await runnerContainerRunning(namespace, name);
    await podEvicted(namespace, name);
    const pod = await read(namespace, name);
    expect(pod.status?.phase).toBe('Failed');
    expect(pod.status?.reason).toBe('Evicted');
    expect(stateOf(pod, 'runner')).toBe('terminated:137');
  });

  it('keeps a deleted running pod until finishPodDeletion removes it like the kubelet', async () => {
    const namespace = await createTestNamespace('pods');
    const name = await createRunnerPod(namespace);
    await runnerContainerRunning(namespace, name);
    await api.deleteNamespacedPod({ namespace, name });
    const terminating = await read(namespace, name);
    expect(terminating.metadata?.deletionTimestamp).toBeDefined();

    await finishPodDeletion(namespace, name);

    const gone = await read(namespace, name).then(
      () => false,
      (err: unknown) => err instanceof ApiException && err.code === 404,
    );
    expect(gone).toBe(true);
  });

  it('leaves unbound and terminal pods to the apiserver, which removes them at once on delete', async () => {
    const namespace = await createTestNamespace('pods');
    const unbound = await createRunnerPod(namespace);
    await api.deleteNamespacedPod({ namespace, name: unbound });
    const unboundGone = await read(namespace, unbound).then(
      () => false,
      (err: unknown) => err instanceof ApiException && err.code === 404,
    );
    expect(unboundGone).toBe(true);

    const finished = await createRunnerPod(namespace);
    await runnerContainerRunning(namespace, finished);
    await runnerContainerTerminated(namespace, finished, 0);
    await api.deleteNamespacedPod({ namespace, name: finished });
    const finishedGone = await read(namespace, finished).then(
      () => false,
      (err: unknown) => err instanceof ApiException && err.code === 404,
    );
    expect(finishedGone).toBe(true);
  });

  it('refuses to play a runner on a pod without a runner container, naming the pod', async () => {
    const namespace = await createTestNamespace('pods');
    await api.createNamespacedPod({
      namespace,
      body: { metadata: { name: 'other' }, spec: { containers: [{ name: 'app', image: 'busybox' }] } },
    });
    await expect(runnerContainerRunning(namespace, 'other')).rejects.toThrow(
      `Pod ${namespace}/other has no container named runner (it has: app)`,
    );
  });
});
