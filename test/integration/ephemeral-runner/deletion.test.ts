import { Watch, type V1Pod, type V1Secret } from '@kubernetes/client-node';
import {
  EPHEMERAL_RUNNER_ACTIONS_FINALIZER,
  EPHEMERAL_RUNNER_FINALIZER,
  EphemeralRunnerKind,
} from '@aro/api';
import { PodKind, SecretKind } from '@aro/kube';
import { runnerContainerRunning, runnerContainerTerminated, testKubeConfig, waitFor } from '../../harness';
import {
  ControllerFixture,
  controllerSuite,
  createScaleSet,
  FixtureOptions,
  reconcileCounts,
} from './fixture';

describe('EphemeralRunner deletion', () => {
  const suite = controllerSuite();
  let f: ControllerFixture;

  const deleteRunner = (name: string) => f.kube.delete(EphemeralRunnerKind, f.namespace, name);
  const registrationGone = (name: string) =>
    waitFor(() => suite.sim.runner(name) === undefined, {
      description: `registration ${name} removed from the service`,
    });

  async function pendingRunner(name: string, opts: FixtureOptions = {}) {
    f = await suite.start(opts);
    await f.createRunner(name);
    await f.waitForPod(name, (p) => p !== undefined, 'the runner pod');
    await runnerContainerRunning(f.namespace, name);
    return f.waitForRunner(name, (r) => r?.status?.phase === 'Pending', 'phase Pending');
  }

  it('removes the registration of a live pod before deleting the pod (gracefully) and the secret (scenario 12)', async () => {
    await pendingRunner('del-a');
    await deleteRunner('del-a');
    await f.waitForRunner('del-a', (r) => r === undefined, 'the EphemeralRunner to be gone');
    expect(suite.sim.runner('del-a')).toBeUndefined();
    const pod = await f.pod('del-a');
    // Still running: deleted with its own grace period, so its containers get their SIGTERM.
    expect(pod?.metadata?.deletionTimestamp).toBeDefined();
    expect(pod?.metadata?.deletionGracePeriodSeconds).toBe(30);
    expect(await f.secret('del-a')).toBeUndefined();
  });

  it('keeps the pod of a runner executing a job, and finishes once the pod has stopped', async () => {
    await pendingRunner('del-b');
    const job = suite.sim.startJob('del-b', { displayName: 'build' });
    await deleteRunner('del-b');
    await new Promise((r) => setTimeout(r, 1_000));
    const runner = await f.runner('del-b');
    expect(runner?.metadata?.deletionTimestamp).toBeDefined();
    expect(runner?.metadata?.finalizers).toEqual([
      EPHEMERAL_RUNNER_FINALIZER,
      EPHEMERAL_RUNNER_ACTIONS_FINALIZER,
    ]);
    expect((await f.pod('del-b'))?.metadata?.deletionTimestamp).toBeUndefined();
    expect(suite.sim.runner('del-b')?.jobId).toBe(job.jobId);

    suite.sim.completeJob(job.jobId, 'succeeded');
    await runnerContainerTerminated(f.namespace, 'del-b', 1, { phase: 'Failed' });
    await f.waitForRunner('del-b', (r) => r === undefined, 'the EphemeralRunner to be gone');
    await registrationGone('del-b');
    await f.waitForPod('del-b', (p) => p === undefined, 'the stopped pod to be gone at once');
  });

  it('recovers the registration from the jitconfig secret when the status never recorded it', async () => {
    f = await suite.start();
    await f.createRunner('del-c');
    await f.waitForPod('del-c', (p) => p !== undefined, 'the runner pod');
    expect((await f.runner('del-c'))?.status?.runnerId ?? 0).toBe(0);
    expect(suite.sim.runner('del-c')).toBeDefined();
    await deleteRunner('del-c');
    await f.waitForRunner('del-c', (r) => r === undefined, 'the EphemeralRunner to be gone');
    await registrationGone('del-c');
  });

  it('recovers the registration by name when neither status nor secret recorded it', async () => {
    f = await suite.start({ start: false });
    await suite.actions().generateJitRunnerConfig({ name: 'del-d', workFolder: '' }, f.scaleSetId);
    await f.createRunner('del-d');
    await f.kube.mergePatch(EphemeralRunnerKind, f.namespace, 'del-d', {
      metadata: { finalizers: [EPHEMERAL_RUNNER_FINALIZER, EPHEMERAL_RUNNER_ACTIONS_FINALIZER] },
    });
    await deleteRunner('del-d');
    await f.manager.start();
    await f.waitForRunner('del-d', (r) => r === undefined, 'the EphemeralRunner to be gone');
    await registrationGone('del-d');
  });

  it('deletes a runner that never registered and whose config cannot build a client, without asking the service', async () => {
    f = await suite.start();
    const callsBefore = Object.values(suite.sim.callCounts()).reduce((a, b) => a + b, 0);
    await f.createRunner('del-j', (spec) => {
      spec.githubConfigUrl = 'not a url';
    });
    await f.createRunner('del-k', (spec) => {
      spec.githubConfigSecret = 'no-such-secret';
    });
    for (const name of ['del-j', 'del-k']) {
      // Both finalizers on: the controller took the runner in, then failed to register it.
      await f.waitForRunner(
        name,
        (r) => r?.metadata?.finalizers?.includes(EPHEMERAL_RUNNER_ACTIONS_FINALIZER) ?? false,
        'the registration finalizer',
      );
      await deleteRunner(name);
    }
    for (const name of ['del-j', 'del-k']) {
      await f.waitForRunner(name, (r) => r === undefined, `${name} to be gone`);
    }
    const callsAfter = Object.values(suite.sim.callCounts()).reduce((a, b) => a + b, 0);
    expect(callsAfter - callsBefore).toBe(0);
  });

  it('queues again, after a restart, the removal of a Failed runner whose queued removal was lost', async () => {
    // As a crash leaves it: the registration finalizer already dropped (the removal was queued in
    // memory), the registration still on the service.
    f = await suite.start({ start: false });
    const jit = await suite
      .actions()
      .generateJitRunnerConfig({ name: 'del-l', workFolder: '' }, f.scaleSetId);
    await f.createRunner('del-l');
    await f.kube.mergePatch(EphemeralRunnerKind, f.namespace, 'del-l', {
      metadata: { finalizers: [EPHEMERAL_RUNNER_FINALIZER] },
    });
    await f.kube.mergePatchStatus(EphemeralRunnerKind, f.namespace, 'del-l', {
      status: { phase: 'Failed', runnerId: jit.runner.id, runnerName: 'del-l' },
    });
    await f.manager.start();
    await registrationGone('del-l');
    expect((await f.runner('del-l'))?.status?.phase).toBe('Failed');
  });

  it('refuses to drop the finalizer when the name is registered to another scale set', async () => {
    f = await suite.start({ start: false });
    const otherSet = await createScaleSet(suite.sim, `other-${Date.now()}`);
    const foreign = await suite
      .actions()
      .generateJitRunnerConfig({ name: 'del-e', workFolder: '' }, otherSet);
    await f.createRunner('del-e');
    await f.kube.mergePatch(EphemeralRunnerKind, f.namespace, 'del-e', {
      metadata: { finalizers: [EPHEMERAL_RUNNER_FINALIZER, EPHEMERAL_RUNNER_ACTIONS_FINALIZER] },
    });
    await deleteRunner('del-e');
    await f.manager.start();
    // The refusal is a reconcile error, retried with backoff: evidence that the controller looked.
    await waitFor(async () => (await reconcileCounts(f)).errors >= 1, {
      description: 'a failed reconcile of del-e',
    });
    const runner = await f.runner('del-e');
    expect(runner?.metadata?.finalizers).toContain(EPHEMERAL_RUNNER_ACTIONS_FINALIZER);
    expect(suite.sim.runner('del-e')?.id).toBe(foreign.runner.id);
  });

  it('removes the registration of a deleted runner when setup was given no uncached reader (the client is the default)', async () => {
    await pendingRunner('del-i', { withoutApiReader: true });
    await deleteRunner('del-i');
    await f.waitForRunner('del-i', (r) => r === undefined, 'the EphemeralRunner to be gone');
    await registrationGone('del-i');
  });

  it('deletes the pods and secrets the container hook made for the runner', async () => {
    f = await suite.start();
    await f.createRunner('del-f', (spec) => {
      spec.spec!.containers[0].env = [
        { name: 'ACTIONS_RUNNER_CONTAINER_HOOKS', value: '/home/runner/k8s/index.js' },
      ];
    });
    await f.waitForPod('del-f', (p) => p !== undefined, 'the runner pod');
    const labels = { 'runner-pod': 'del-f' };
    await f.kube.create<V1Pod>(PodKind, {
      metadata: { name: 'del-f-workflow', namespace: f.namespace, labels },
      spec: { containers: [{ name: 'job', image: 'node:20' }] },
    });
    await f.kube.create<V1Secret>(SecretKind, {
      metadata: { name: 'del-f-step', namespace: f.namespace, labels },
      stringData: { a: 'b' },
    });
    await deleteRunner('del-f');
    await f.waitForRunner('del-f', (r) => r === undefined, 'the EphemeralRunner to be gone');
    const hookPod = await f.pod('del-f-workflow');
    expect(hookPod === undefined || hookPod.metadata?.deletionTimestamp !== undefined).toBe(true);
    expect(await f.secret('del-f-step')).toBeUndefined();
  });

  it('deletes a pod whose containers all exited at once, before the kubelet reports a terminal phase', async () => {
    await pendingRunner('del-g');
    // All containers terminated while the phase still says Running: nothing left to stop.
    await runnerContainerTerminated(f.namespace, 'del-g', 1, { phase: 'Running' });
    await f.waitForRunner(
      'del-g',
      (r) => Object.keys(r?.status?.failures ?? {}).length === 1,
      'the failure recorded',
    );
    const old = (await f.runner('del-g'))!.status!.failures!;
    const pod = await f.pod('del-g');
    expect(pod === undefined || !Object.keys(old).includes(pod.metadata!.uid!)).toBe(true);
  });

  it('leaves the pod its own grace period when TerminatedPodGracePeriodSeconds is negative', async () => {
    await pendingRunner('del-h', { config: { terminatedPodGracePeriodSeconds: -1 } });
    const before = await f.pod('del-h');
    await runnerContainerTerminated(f.namespace, 'del-h', 1, { phase: 'Running' });
    await f.waitForRunner(
      'del-h',
      (r) => Object.keys(r?.status?.failures ?? {}).length === 1,
      'the failure recorded',
    );
    const pod = await f.pod('del-h');
    expect(pod?.metadata?.uid).toBe(before?.metadata?.uid);
    expect(pod?.metadata?.deletionTimestamp).toBeDefined();
    expect(pod?.metadata?.deletionGracePeriodSeconds).toBe(30);
  });
  it('deletes the pod it created when the runner goes before the cache shows that pod, not leaving it to the garbage collector', async () => {
    // The cache never shows this pod: the state of a runner deleted moments after its pod was created
    // (a scale-down or teardown racing the create), the pod's watch event still on its way.
    f = await suite.start({ faults: { hidePod: (name) => name === 'del-m' } });
    await f.createRunner('del-m');
    await f.waitForPod('del-m', (p) => p !== undefined, 'the runner pod, created by the controller');
    await runnerContainerRunning(f.namespace, 'del-m');

    // Who deleted the pod shows in the order of the writes (etcd revisions, one sequence for every
    // kind): the controller deletes it before dropping the runner's finalizers; the garbage collector,
    // the only other deleter here, can act only once the runner is gone.
    const order: Array<{ what: string; revision: number }> = [];
    const seen = (what: string, obj: { metadata?: { resourceVersion?: string } }) =>
      order.push({ what, revision: Number(obj.metadata?.resourceVersion) });
    const watch = new Watch(testKubeConfig());
    const watches = await Promise.all([
      watch.watch(
        `/api/v1/namespaces/${f.namespace}/pods`,
        {},
        (type: string, pod: V1Pod) => {
          if (pod.metadata?.name !== 'del-m') return;
          if (type === 'DELETED' || pod.metadata.deletionTimestamp) seen('pod deleted', pod);
        },
        () => undefined,
      ),
      watch.watch(
        `/apis/actions.github.com/v1alpha1/namespaces/${f.namespace}/ephemeralrunners`,
        {},
        (type: string, runner: { metadata?: { name?: string; resourceVersion?: string } }) => {
          if (type === 'DELETED' && runner.metadata?.name === 'del-m') seen('runner gone', runner);
        },
        () => undefined,
      ),
    ]);
    try {
      await deleteRunner('del-m');
      await waitFor(
        () => order.some((e) => e.what === 'runner gone') && order.some((e) => e.what === 'pod deleted'),
        { description: 'the runner gone and its pod deleted, as the watches saw them' },
      );
    } finally {
      for (const w of watches) w.abort();
    }
    const first = (what: string) => Math.min(...order.filter((e) => e.what === what).map((e) => e.revision));
    expect(first('pod deleted')).toBeLessThan(first('runner gone'));
  });
});
