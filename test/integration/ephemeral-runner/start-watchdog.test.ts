import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import { EventKind } from '@aro/kube';
import { setPodStatus, waitFor } from '../../harness';
import { scaled } from '../../harness/time-scale';
import { ControllerFixture, controllerSuite, idleReconcileCount, waitForReconcileSince } from './fixture';

/**
 * The start watchdog (libs/controllers/src/ephemeral-runner/start-watchdog.ts) on the real apiserver:
 * the test plays the kubelet and the scheduler by writing the pod's status.
 */
describe('EphemeralRunner start watchdog', () => {
  const suite = controllerSuite();
  let f: ControllerFixture;

  const waitingContainer = (pod: V1Pod, reason: string, message: string) => ({
    phase: 'Pending',
    conditions: [{ type: 'PodScheduled', status: 'True', lastTransitionTime: new Date() }],
    containerStatuses: pod.spec!.containers.map((c) => ({
      name: c.name,
      image: c.image ?? '',
      imageID: '',
      ready: false,
      restartCount: 0,
      state: { waiting: { reason, message } },
    })),
  });

  const warnings = async (name: string, reason: string) =>
    (await f.kube.list<CoreV1Event>(EventKind, { namespace: f.namespace })).filter(
      (e) => e.involvedObject?.name === name && e.reason === reason && e.type === 'Warning',
    );

  /** Failed with the kubelet's reason, a Warning Event, registration, pod and secret gone. */
  async function expectFailedAndFreed(name: string, reason: string, message: RegExp): Promise<void> {
    const runner = await f.waitForRunner(name, (r) => r?.status?.phase === 'Failed', 'phase Failed');
    expect(runner?.status).toMatchObject({ reason, ready: false });
    expect(runner?.status?.message).toMatch(message);
    await waitFor(async () => (await warnings(name, 'RunnerStartFailed')).length === 1, {
      description: 'one RunnerStartFailed Warning Event',
    });
    expect((await warnings(name, 'RunnerStartFailed'))[0].message).toContain(reason);
    await waitFor(() => suite.sim.runner(name) === undefined, { description: 'the registration removed' });
    await f.waitForPod(name, (p) => p === undefined, 'the pod deleted');
    await waitFor(async () => (await f.secret(name)) === undefined, { description: 'the secret deleted' });
  }

  it('fails a runner whose pod waits with a reason the kubelet calls permanent at once, long before the timeout', async () => {
    f = await suite.start({ config: { startTimeoutMs: 10 * 60_000 } });
    await f.createRunner('wd-invalid');
    await f.waitForPod('wd-invalid', (p) => p !== undefined, 'the runner pod');
    await waitFor(() => suite.sim.runner('wd-invalid') !== undefined, { description: 'the registration' });
    const started = Date.now();
    await setPodStatus(f.namespace, 'wd-invalid', (pod) =>
      waitingContainer(pod, 'InvalidImageName', 'Failed to apply default image tag "bad//image": invalid'),
    );
    await expectFailedAndFreed('wd-invalid', 'InvalidImageName', /bad\/\/image/);
    console.log(
      `start watchdog: InvalidImageName failed the runner ${Date.now() - started} ms after the kubelet reported it`,
    );
  });

  it('gives a Pending pod the whole RUNNER_START_TIMEOUT, then fails it with the kubelet reason and message', async () => {
    const timeoutMs = 6_000;
    f = await suite.start({ config: { startTimeoutMs: timeoutMs } });
    await f.createRunner('wd-pull');
    const pod = await f.waitForPod('wd-pull', (p) => p !== undefined, 'the runner pod');
    const createdAt = new Date(pod!.metadata!.creationTimestamp!).getTime();
    const since = await idleReconcileCount(f);
    await setPodStatus(f.namespace, 'wd-pull', (p) =>
      waitingContainer(p, 'ImagePullBackOff', 'Back-off pulling image "ghcr.io/acme/runner:typo"'),
    );
    await waitForReconcileSince(f, since, 'the pod reported ImagePullBackOff');
    // The controller has looked at the backing-off pod before its deadline, and kept it.
    expect(Date.now() - createdAt).toBeLessThan(timeoutMs);
    expect((await f.runner('wd-pull'))?.status?.phase).not.toBe('Failed');
    expect(await f.pod('wd-pull')).toBeDefined();

    await expectFailedAndFreed('wd-pull', 'ImagePullBackOff', /runner:typo.*within 6s/);
    const failedAt = new Date(
      (await warnings('wd-pull', 'RunnerStartFailed'))[0].firstTimestamp ?? new Date(),
    ).getTime();
    // Event timestamps have second precision; the pod's creation time too.
    expect(failedAt - createdAt).toBeGreaterThanOrEqual(timeoutMs - 1_000);
    console.log(
      `start watchdog: timeout ${timeoutMs} ms, runner failed ${failedAt - createdAt} ms after its pod was created`,
    );
  });

  it('fails an unschedulable pod at its deadline, found by its own requeue with no pod event, not a later one', async () => {
    const timeoutMs = 5_000;
    f = await suite.start({ config: { startTimeoutMs: timeoutMs } });
    await f.createRunner('wd-unsched');
    const pod = await f.waitForPod('wd-unsched', (p) => p !== undefined, 'the runner pod');
    // Second precision: the deadline the controller computes starts no later than this.
    const createdAt = new Date(pod!.metadata!.creationTimestamp!).getTime();
    await setPodStatus(f.namespace, 'wd-unsched', () => ({
      phase: 'Pending',
      conditions: [
        {
          type: 'PodScheduled',
          status: 'False',
          reason: 'Unschedulable',
          message: '0/3 nodes are available: 3 Insufficient cpu.',
          lastTransitionTime: new Date(),
        },
      ],
    }));
    // Nothing else happens to the runner or its pod: only the watchdog's requeue at the deadline can
    // find it. Without it nothing looks again at all; with any later one (the controller's other
    // requeues are 30 s) the runner holds its slot far past the deadline.
    const failed = await f.waitForRunner('wd-unsched', (r) => r?.status?.phase === 'Failed', 'phase Failed');
    const failedAfterMs = Date.now() - createdAt;
    expect(failed?.status?.reason).toBe('Unschedulable');
    console.log(
      `start watchdog: deadline ${timeoutMs} ms, unschedulable runner failed ${failedAfterMs} ms after its pod was created`,
    );
    expect(failedAfterMs).toBeGreaterThanOrEqual(timeoutMs - 1_000);
    // The deadline plus the pass that fails it (a status write) and the poll that sees it, at this
    // run's time scale; up to a second more for the creation time's precision.
    expect(failedAfterMs).toBeLessThanOrEqual(timeoutMs + 1_000 + scaled(4_000));
    await expectFailedAndFreed('wd-unsched', 'Unschedulable', /Insufficient cpu.*within 5s/);
  });
});
