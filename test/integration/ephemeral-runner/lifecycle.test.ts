import {
  EPHEMERAL_RUNNER_ACTIONS_FINALIZER,
  EPHEMERAL_RUNNER_FINALIZER,
  EphemeralRunnerKind,
} from '@aro/api';
import { decodeJitConfig } from '../../../apps/simulator/src';
import type { CoreV1Event } from '@kubernetes/client-node';
import { EventKind } from '@aro/kube';
import { runnerContainerRunning, runnerContainerTerminated, setPodStatus, waitFor } from '../../harness';
import {
  ControllerFixture,
  controllerSuite,
  idleReconcileCount,
  USER_AGENT,
  waitForReconcileSince,
} from './fixture';

const b64 = (s: string | undefined) => Buffer.from(s ?? '', 'base64').toString('utf8');

describe('EphemeralRunner lifecycle', () => {
  const suite = controllerSuite();
  let f: ControllerFixture;

  it('adds both finalizers and creates the jitconfig secret holding the registration (scenario 1)', async () => {
    f = await suite.start();
    await f.createRunner('runner-a');
    const runner = await f.waitForRunner(
      'runner-a',
      (r) => (r?.metadata?.finalizers ?? []).length === 2,
      'both finalizers',
    );
    expect(runner?.metadata?.finalizers).toEqual([
      EPHEMERAL_RUNNER_FINALIZER,
      EPHEMERAL_RUNNER_ACTIONS_FINALIZER,
    ]);

    const secret = await f
      .waitForPod('runner-a', (p) => p !== undefined, 'the runner pod')
      .then(() => f.secret('runner-a'));
    const registration = suite.sim.runner('runner-a');
    expect(registration).toMatchObject({ name: 'runner-a', scaleSetId: f.scaleSetId, status: 'offline' });
    expect(b64(secret?.data?.runnerId)).toBe(String(registration?.id));
    expect(b64(secret?.data?.runnerName)).toBe('runner-a');
    expect(b64(secret?.data?.scaleSetId)).toBe(String(f.scaleSetId));
    expect(b64(secret?.data?.jitToken)).not.toBe('');
    expect(secret?.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: 'EphemeralRunner',
      name: 'runner-a',
      controller: true,
    });
  });

  it('creates the runner pod from the template with the JIT config and operator env injected', async () => {
    f = await suite.start();
    await f.createRunner('runner-b', (spec) => {
      spec.spec!.containers.push({ name: 'sidecar', image: 'busybox' });
      spec.spec!.containers[0].workingDir = '/home/runner/_work';
      spec.metadata = { labels: { team: 'infra' } };
    });
    const pod = await f.waitForPod('runner-b', (p) => p !== undefined, 'the runner pod');
    const runnerContainer = pod!.spec!.containers.find((c) => c.name === 'runner')!;
    const env = Object.fromEntries((runnerContainer.env ?? []).map((e) => [e.name, e]));
    expect(env.ACTIONS_RUNNER_INPUT_JITCONFIG.valueFrom?.secretKeyRef).toEqual({
      name: 'runner-b',
      key: 'jitToken',
    });
    expect(env.GITHUB_ACTIONS_RUNNER_EXTRA_USER_AGENT.value).toBe(USER_AGENT);
    expect(env.ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE.value).toBe('1');
    expect(pod!.spec!.containers.find((c) => c.name === 'sidecar')!.env).toBeUndefined();
    expect(pod!.metadata?.labels).toMatchObject({ team: 'infra', 'actions-ephemeral-runner': 'True' });
    expect(pod!.metadata?.labels?.['pod-template-hash']).toMatch(/^[0-9a-f]{10}$/);
    expect(pod!.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'EphemeralRunner', controller: true });
    // The work folder is registered with the service from the runner container's workingDir.
    const secret = await f.secret('runner-b');
    const jit = decodeJitConfig(b64(secret?.data?.jitToken));
    expect(jit).toMatchObject({ runnerName: 'runner-b', workFolder: '/home/runner/_work' });
  });

  it('publishes Pending with the runner identity in one status patch once the runner container runs (scenarios 13, 14)', async () => {
    f = await suite.start();
    await f.createRunner('runner-c');
    await f.waitForPod('runner-c', (p) => p !== undefined, 'the runner pod');
    let runner = await f.runner('runner-c');
    expect(runner?.status?.phase).toBeUndefined();
    expect(runner?.status?.runnerId ?? 0).toBe(0);

    await runnerContainerRunning(f.namespace, 'runner-c', { ready: false });
    runner = await f.waitForRunner('runner-c', (r) => r?.status?.phase === 'Pending', 'phase Pending');
    const registration = suite.sim.runner('runner-c');
    expect(runner?.status).toMatchObject({
      phase: 'Pending',
      ready: false,
      runnerId: registration?.id,
      runnerName: 'runner-c',
    });
  });

  it('follows the most recent Ready condition into status.ready (scenario 15)', async () => {
    f = await suite.start();
    await f.createRunner('runner-d');
    await f.waitForPod('runner-d', (p) => p !== undefined, 'the runner pod');
    await runnerContainerRunning(f.namespace, 'runner-d', { ready: true });
    await f.waitForRunner('runner-d', (r) => r?.status?.ready === true, 'ready true');
    await setPodStatus(f.namespace, 'runner-d', (pod) => ({
      ...pod.status,
      conditions: [
        ...(pod.status?.conditions ?? []).filter((c) => c.type !== 'Ready'),
        { type: 'Ready', status: 'True', lastTransitionTime: new Date(Date.now() - 60_000) },
        { type: 'Ready', status: 'False', lastTransitionTime: new Date() },
      ],
    }));
    await f.waitForRunner(
      'runner-d',
      (r) => r?.status?.ready === false,
      'ready false after the latest condition',
    );
  });

  it('does not set a phase while the runner container has no state (scenario 16)', async () => {
    f = await suite.start();
    await f.createRunner('runner-e');
    await f.waitForPod('runner-e', (p) => p !== undefined, 'the runner pod');
    const before = await idleReconcileCount(f);
    await setPodStatus(f.namespace, 'runner-e', (pod) => ({
      ...pod.status,
      phase: 'Pending',
      containerStatuses: [],
    }));
    // A later, unrelated write gives the controller every chance to act on the pod it saw.
    await f.kube.mergePatch(EphemeralRunnerKind, f.namespace, 'runner-e', {
      metadata: { labels: { poke: '1' } },
    });
    await waitForReconcileSince(f, before, 'the pod status and a runner label changed');
    expect((await f.runner('runner-e'))?.status?.phase).toBeUndefined();
  });

  it('promotes Pending to Running when the listener records a job', async () => {
    f = await suite.start();
    await f.createRunner('runner-f');
    await f.waitForPod('runner-f', (p) => p !== undefined, 'the runner pod');
    await runnerContainerRunning(f.namespace, 'runner-f');
    await f.waitForRunner('runner-f', (r) => r?.status?.phase === 'Pending', 'phase Pending');
    await f.kube.mergePatchStatus(EphemeralRunnerKind, f.namespace, 'runner-f', {
      status: { jobId: 'job-1', jobRequestId: 11, jobRepositoryName: 'octo/hello' },
    });
    const runner = await f.waitForRunner('runner-f', (r) => r?.status?.phase === 'Running', 'phase Running');
    expect(runner?.status?.jobId).toBe('job-1');
  });

  it('does not mark Succeeded while the pod has not reported the runner terminated (scenario 20)', async () => {
    f = await suite.start();
    await f.createRunner('runner-g');
    await f.waitForPod('runner-g', (p) => p !== undefined, 'the runner pod');
    await runnerContainerRunning(f.namespace, 'runner-g');
    await f.waitForRunner('runner-g', (r) => r?.status?.phase === 'Pending', 'phase Pending');
    const before = await idleReconcileCount(f);
    await setPodStatus(f.namespace, 'runner-g', (pod) => ({ ...pod.status, phase: 'Succeeded' }));
    await waitForReconcileSince(f, before, 'the pod phase changed to Succeeded');
    const runner = await f.runner('runner-g');
    expect(runner?.status?.phase).toBe('Pending');
    expect(runner?.metadata?.deletionTimestamp).toBeUndefined();
  });

  it('deletes the EphemeralRunner after a clean exit, without asking the service to remove the runner (scenario 21)', async () => {
    f = await suite.start();
    await f.createRunner('runner-h');
    await f.waitForPod('runner-h', (p) => p !== undefined, 'the runner pod');
    await runnerContainerRunning(f.namespace, 'runner-h');
    await f.waitForRunner('runner-h', (r) => r?.status?.phase === 'Pending', 'phase Pending');
    suite.sim.resetCallCounts();
    suite.sim.runnerExited('runner-h', 0);
    await runnerContainerTerminated(f.namespace, 'runner-h', 0, { phase: 'Succeeded' });
    await f.waitForRunner('runner-h', (r) => r === undefined, 'the EphemeralRunner to be gone');
    await f.waitForPod('runner-h', (p) => p === undefined, 'the pod to be gone');
    expect(await f.secret('runner-h')).toBeUndefined();
    expect(suite.sim.runner('runner-h')).toBeUndefined();
    expect(suite.sim.callCount('DELETE agents/{id}')).toBe(0);
  });

  it('treats a Failed pod whose runner container exited 0 as success (scenarios 8, 9)', async () => {
    // No job assigned: the wrong path (a failure without a job) would recreate the pod and keep the
    // runner, and a failure with a job would delete it too but through a removal; only success ends
    // with a RunnerSucceeded event and no removal call (transitions are Events with EVENTS=all).
    f = await suite.start({ config: { events: 'all' } });
    await f.createRunner('runner-i');
    await f.waitForPod('runner-i', (p) => p !== undefined, 'the runner pod');
    await runnerContainerRunning(f.namespace, 'runner-i');
    await f.waitForRunner('runner-i', (r) => r?.status?.phase === 'Pending', 'phase Pending');
    suite.sim.resetCallCounts();
    suite.sim.runnerExited('runner-i', 0);
    await runnerContainerTerminated(f.namespace, 'runner-i', 0, { phase: 'Failed' });
    await f.waitForRunner('runner-i', (r) => r === undefined, 'the EphemeralRunner to be gone');
    const succeeded = await waitFor(
      async () =>
        (await f.kube.list<CoreV1Event>(EventKind, { namespace: f.namespace })).find(
          (e) => e.involvedObject?.name === 'runner-i' && e.reason === 'RunnerSucceeded',
        ),
      { description: 'a RunnerSucceeded event on runner-i (the Succeeded phase was recorded)' },
    );
    expect(succeeded.type).toBe('Normal');
    expect(suite.sim.callCount('DELETE agents/{id}')).toBe(0);
    expect(suite.sim.runner('runner-i')).toBeUndefined();
  });
});
