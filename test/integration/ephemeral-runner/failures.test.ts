import { EphemeralRunner, EphemeralRunnerKind, failureCount } from '@aro/api';
import {
  initContainerFailed,
  podEvicted,
  runnerContainerRunning,
  runnerContainerTerminated,
  setPodStatus,
} from '../../harness';
import { ControllerFixture, controllerSuite, FixtureOptions } from './fixture';

describe('EphemeralRunner pod failures', () => {
  const suite = controllerSuite();
  let f: ControllerFixture;

  async function runningRunner(name: string, opts: FixtureOptions = {}) {
    f = await suite.start(opts);
    await f.createRunner(name);
    const pod = await f.waitForPod(name, (p) => p !== undefined, 'the runner pod');
    await runnerContainerRunning(f.namespace, name);
    await f.waitForRunner(name, (r) => r?.status?.phase === 'Pending', 'phase Pending');
    return pod!;
  }

  const assignJob = (name: string) =>
    f.kube.mergePatchStatus<EphemeralRunner>(EphemeralRunnerKind, f.namespace, name, {
      status: { jobId: 'job-1' },
    });

  it('recreates the pod and records the failure by pod UID when the runner fails with no job (scenarios 2, 10)', async () => {
    const first = await runningRunner('fail-a');
    await runnerContainerTerminated(f.namespace, 'fail-a', 1, { phase: 'Failed', reason: 'Error' });
    const runner = await f.waitForRunner(
      'fail-a',
      (r) => failureCount(r?.status) === 1,
      'one recorded failure',
    );
    expect(Object.keys(runner!.status!.failures!)).toEqual([first.metadata!.uid]);
    expect(runner?.status?.ready).toBe(false);
    const second = await f.waitForPod(
      'fail-a',
      (p) => p !== undefined && p.metadata?.uid !== first.metadata?.uid,
      'a new pod with another UID',
    );
    expect(second?.metadata?.uid).not.toBe(first.metadata?.uid);
    // The registration is kept for the new pod: the JIT config in the secret is still valid.
    expect(suite.sim.runner('fail-a')).toBeDefined();
  });

  it('deletes the EphemeralRunner when its pod fails with a job assigned, releasing the registration (scenario 3)', async () => {
    await runningRunner('fail-b');
    await assignJob('fail-b');
    await f.waitForRunner('fail-b', (r) => r?.status?.phase === 'Running', 'phase Running');
    await runnerContainerTerminated(f.namespace, 'fail-b', 2, { phase: 'Failed' });
    await f.waitForRunner('fail-b', (r) => r === undefined, 'the EphemeralRunner to be deleted');
    await waitForRegistrationGone('fail-b');
  });

  it('deletes the EphemeralRunner when the pod failed before the runner state was recorded and a job is assigned (scenario 4)', async () => {
    await runningRunner('fail-c');
    await assignJob('fail-c');
    await f.waitForRunner('fail-c', (r) => r?.status?.phase === 'Running', 'phase Running');
    await setPodStatus(f.namespace, 'fail-c', (pod) => ({
      ...pod.status,
      phase: 'Failed',
      containerStatuses: [],
    }));
    await f.waitForRunner('fail-c', (r) => r === undefined, 'the EphemeralRunner to be deleted');
  });

  it('recreates the pod when it failed before the runner state was recorded and no job is assigned (scenario 5)', async () => {
    const first = await runningRunner('fail-d');
    await setPodStatus(f.namespace, 'fail-d', (pod) => ({
      ...pod.status,
      phase: 'Failed',
      containerStatuses: [],
    }));
    await f.waitForRunner('fail-d', (r) => failureCount(r?.status) === 1, 'one recorded failure');
    await f.waitForPod(
      'fail-d',
      (p) => p !== undefined && p.metadata?.uid !== first.metadata?.uid,
      'a new pod',
    );
  });

  it('recreates the pod when an init container fails before the pod phase moves to Failed (scenario 6)', async () => {
    f = await suite.start();
    await f.createRunner('fail-e', (spec) => {
      spec.spec!.initContainers = [{ name: 'setup', image: 'busybox' }];
    });
    const first = await f.waitForPod('fail-e', (p) => p !== undefined, 'the runner pod');
    await initContainerFailed(f.namespace, 'fail-e', { container: 'setup', exitCode: 3 });
    await f.waitForRunner('fail-e', (r) => failureCount(r?.status) === 1, 'one recorded failure');
    await f.waitForPod(
      'fail-e',
      (p) => p !== undefined && p.metadata?.uid !== first!.metadata?.uid,
      'a new pod',
    );
  });

  it('deletes the EphemeralRunner when an init container fails with a job assigned (scenario 7)', async () => {
    f = await suite.start();
    await f.createRunner('fail-f', (spec) => {
      spec.spec!.initContainers = [{ name: 'setup', image: 'busybox' }];
    });
    await f.waitForPod('fail-f', (p) => p !== undefined, 'the runner pod');
    await f.waitForRunner('fail-f', (r) => (r?.metadata?.finalizers ?? []).length === 2, 'finalizers');
    await assignJob('fail-f');
    await initContainerFailed(f.namespace, 'fail-f', { container: 'setup', exitCode: 3 });
    await f.waitForRunner('fail-f', (r) => r === undefined, 'the EphemeralRunner to be deleted');
  });

  it('recreates the pod of an evicted runner and of one failed for lack of resources (scenarios 18, 19)', async () => {
    const first = await runningRunner('fail-g');
    await podEvicted(f.namespace, 'fail-g');
    await f.waitForRunner('fail-g', (r) => r?.status?.reason === 'Evicted', 'the eviction recorded');
    const second = await f.waitForPod(
      'fail-g',
      (p) => p !== undefined && p.metadata?.uid !== first.metadata?.uid,
      'a new pod',
    );
    await setPodStatus(f.namespace, 'fail-g', (pod) => ({
      ...pod.status,
      phase: 'Failed',
      reason: 'OutOfcpu',
      message: "Pod Node didn't have enough resource: cpu",
    }));
    await f.waitForRunner('fail-g', (r) => failureCount(r?.status) === 2, 'two recorded failures');
    await f.waitForPod(
      'fail-g',
      (p) => p !== undefined && p.metadata?.uid !== second!.metadata?.uid,
      'a third pod',
    );
  });

  it('deletes the EphemeralRunner after more than the allowed consecutive failures (scenario 17)', async () => {
    f = await suite.start({ config: { maxFailures: 2, failureBackoffBaseMs: 20 } });
    await f.createRunner('fail-h');
    for (let failure = 1; failure <= 3; failure++) {
      const pod = await f.waitForPod(
        'fail-h',
        (p) => p !== undefined && !p.metadata?.deletionTimestamp,
        `pod ${failure}`,
      );
      await runnerContainerTerminated(f.namespace, 'fail-h', 1, { phase: 'Failed' });
      if (failure < 3) {
        await f.waitForRunner(
          'fail-h',
          (r) => failureCount(r?.status) === failure,
          `${failure} recorded failures`,
        );
        await f.waitForPod(
          'fail-h',
          (p) => p?.metadata?.uid !== pod?.metadata?.uid,
          'the failed pod replaced',
        );
      }
    }
    await f.waitForRunner('fail-h', (r) => r === undefined, 'the EphemeralRunner to be deleted');
  });

  it('waits out the backoff after a failure before creating the next pod', async () => {
    // A first failure waits one backoff base; with a base of a minute, no new pod may appear meanwhile.
    f = await suite.start({ config: { failureBackoffBaseMs: 60_000 } });
    await f.createRunner('fail-i');
    const first = await f.waitForPod('fail-i', (p) => p !== undefined, 'the first pod');
    await runnerContainerTerminated(f.namespace, 'fail-i', 1, { phase: 'Failed' });
    await f.waitForRunner('fail-i', (r) => failureCount(r?.status) === 1, 'one failure');
    await f.waitForPod('fail-i', (p) => p === undefined, 'the failed pod to be deleted');
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await f.pod('fail-i')).toBeUndefined();
    expect(first?.metadata?.uid).toBeDefined();
  });

  async function waitForRegistrationGone(name: string): Promise<void> {
    const until = Date.now() + 15_000;
    while (suite.sim.runner(name) !== undefined) {
      if (Date.now() > until) throw new Error(`registration ${name} still on the simulator`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
});
