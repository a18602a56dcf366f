import type { V1Pod } from '@kubernetes/client-node';
import { EPHEMERAL_RUNNER_ACTIONS_FINALIZER, EphemeralRunnerKind } from '@aro/api';
import { PodKind } from '@aro/kube';
import { runnerContainerRunning, runnerContainerTerminated, waitFor } from '../../harness';
import { ControllerFixture, controllerSuite } from './fixture';

const releasesRegistration = (patch: object) =>
  JSON.stringify(patch).includes('finalizers') &&
  !JSON.stringify(patch).includes(EPHEMERAL_RUNNER_ACTIONS_FINALIZER);

describe('EphemeralRunner edge cases', () => {
  const suite = controllerSuite();
  let f: ControllerFixture;

  it('releases the registration in the finished branch when the release after Outdated failed', async () => {
    let failures = 0;
    f = await suite.start({
      faults: {
        // The first patch that drops the registration finalizer fails, after the phase was written.
        failMergePatch: (name, patch) => name === 'edge-a' && releasesRegistration(patch) && failures++ === 0,
      },
    });
    await f.createRunner('edge-a');
    await f.waitForPod('edge-a', (p) => p !== undefined, 'the runner pod');
    await runnerContainerRunning(f.namespace, 'edge-a');
    await f.waitForRunner('edge-a', (r) => r?.status?.phase === 'Pending', 'phase Pending');
    await runnerContainerTerminated(f.namespace, 'edge-a', 7, { phase: 'Failed' });
    await f.waitForRunner(
      'edge-a',
      (r) =>
        r?.status?.phase === 'Outdated' &&
        !(r.metadata?.finalizers ?? []).includes(EPHEMERAL_RUNNER_ACTIONS_FINALIZER),
      'phase Outdated with the registration finalizer dropped on the retry',
    );
    expect(failures).toBeGreaterThanOrEqual(2);
    await waitFor(() => suite.sim.runner('edge-a') === undefined, {
      description: 'the registration removed',
    });
    expect(suite.sim.callCount('DELETE agents/{id}')).toBeGreaterThanOrEqual(1);
  });

  it('waits for the pod event instead of failing when a pod create meets one the cache does not show yet', async () => {
    let hidden = true;
    f = await suite.start({ start: false, faults: { hidePod: (name) => name === 'edge-b' && hidden } });
    await f.createRunner('edge-b');
    // Someone else's pod already holds the name (an old leader's, in a handover).
    await f.kube.create<V1Pod>(PodKind, {
      metadata: { name: 'edge-b', namespace: f.namespace },
      spec: { containers: [{ name: 'runner', image: 'r' }] },
    });
    await f.manager.start();
    await f.waitForRunner('edge-b', (r) => (r?.metadata?.finalizers ?? []).length === 2, 'finalizers');
    await new Promise((r) => setTimeout(r, 1_000));
    const runner = await f.runner('edge-b');
    expect(runner?.status?.phase).toBeUndefined();
    expect(runner?.metadata?.deletionTimestamp).toBeUndefined();

    // Once the cache shows the pod, the controller follows it.
    hidden = false;
    await runnerContainerRunning(f.namespace, 'edge-b');
    await f.waitForRunner('edge-b', (r) => r?.status?.phase === 'Pending', 'phase Pending from the pod');
    expect(
      (await f.kube.get(EphemeralRunnerKind, f.namespace, 'edge-b')).metadata?.deletionTimestamp,
    ).toBeUndefined();
  });
});
