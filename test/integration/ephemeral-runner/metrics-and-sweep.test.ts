import { EphemeralRunnerKind, EphemeralRunnerSet, EphemeralRunnerSetKind } from '@aro/api';
import { MultiClient } from '@aro/actions';
import { DEFAULT_PAT, RunningSimulator } from '../../../apps/simulator/src';
import { runnerContainerRunning, runnerContainerTerminated, waitFor } from '../../harness';
import { ControllerFixture, GITHUB_SECRET, startControllerFixture, startTestSimulator } from './fixture';

describe('EphemeralRunner phase metrics and orphaned registrations', () => {
  let sim: RunningSimulator;
  let f: ControllerFixture | undefined;
  let g: ControllerFixture | undefined;

  beforeAll(async () => {
    sim = await startTestSimulator();
  });
  afterAll(async () => {
    await sim?.stop();
  });
  afterEach(async () => {
    await f?.stop();
    await g?.stop();
    f = g = undefined;
  });

  async function gauge(fixture: ControllerFixture, phase: string): Promise<number> {
    const metric = fixture.registry.getSingleMetric(`gha_controller_${phase}_ephemeral_runners`);
    const values = (await metric?.get())?.values ?? [];
    return values
      .filter((v) => v.labels.namespace === fixture.namespace)
      .reduce((sum, v) => sum + v.value, 0);
  }

  it('keeps the phase gauges right through every transition and after deletion', async () => {
    const fx = (f = await startControllerFixture(sim));
    const labelled = async (name: string) => {
      await fx.createRunner(name);
      await fx.waitForPod(name, (p) => p !== undefined, 'the runner pod');
      await runnerContainerRunning(fx.namespace, name);
      await fx.waitForRunner(name, (r) => r?.status?.phase === 'Pending', 'phase Pending');
    };
    await labelled('m-a');
    await labelled('m-b');
    await waitFor(async () => (await gauge(fx, 'pending')) === 2, {
      description: 'two pending runners counted',
    });

    await fx.kube.mergePatchStatus(EphemeralRunnerKind, fx.namespace, 'm-a', { status: { jobId: 'j' } });
    await fx.waitForRunner('m-a', (r) => r?.status?.phase === 'Running', 'phase Running');
    await waitFor(async () => (await gauge(fx, 'running')) === 1 && (await gauge(fx, 'pending')) === 1, {
      description: 'one running and one pending runner counted',
    });

    await runnerContainerTerminated(fx.namespace, 'm-b', 7, { phase: 'Failed' });
    await fx.waitForRunner('m-b', (r) => r?.status?.phase === 'Outdated', 'phase Outdated');
    await waitFor(async () => (await gauge(fx, 'outdated')) === 1 && (await gauge(fx, 'pending')) === 0, {
      description: 'the outdated runner moved out of pending',
    });

    sim.runnerExited('m-a', 0);
    await runnerContainerTerminated(fx.namespace, 'm-a', 0, { phase: 'Succeeded' });
    await fx.waitForRunner('m-a', (r) => r === undefined, 'the succeeded runner deleted');
    await fx.kube.delete(EphemeralRunnerKind, fx.namespace, 'm-b');
    await fx.waitForRunner('m-b', (r) => r === undefined, 'the outdated runner deleted');
    await waitFor(
      async () => {
        const all = await Promise.all(
          ['pending', 'running', 'outdated', 'succeeded', 'failed'].map((p) => gauge(fx, p)),
        );
        return all.every((v) => v === 0);
      },
      { description: 'every gauge back at zero' },
    );
  });

  it('removes a registration left behind by a crash between releasing the finalizer and the removal', async () => {
    // The first controller loses every removal: the service is unreachable for it.
    const first = (f = await startControllerFixture(sim, { config: { unregistrationDrainTimeoutMs: 0 } }));
    await first.kube.create<EphemeralRunnerSet>(EphemeralRunnerSetKind, {
      apiVersion: 'actions.github.com/v1alpha1',
      kind: 'EphemeralRunnerSet',
      metadata: { name: 'set', namespace: first.namespace },
      spec: {
        replicas: 1,
        patchID: 0,
        ephemeralRunnerSpec: {
          githubConfigUrl: first.configUrl,
          githubConfigSecret: GITHUB_SECRET,
          runnerScaleSetId: first.scaleSetId,
          spec: { containers: [{ name: 'runner', image: 'r' }] },
        },
      },
    });
    await first.createRunner('crash-a');
    await first.waitForPod('crash-a', (p) => p !== undefined, 'the runner pod');
    await runnerContainerRunning(first.namespace, 'crash-a');
    await first.waitForRunner('crash-a', (r) => r?.status?.phase === 'Pending', 'phase Pending');
    const faultId = sim.injectFault({ route: 'DELETE agents/{id}', status: 503 });
    await runnerContainerTerminated(first.namespace, 'crash-a', 1, { phase: 'Failed' });
    await first.kube.delete(EphemeralRunnerKind, first.namespace, 'crash-a');
    await first.waitForRunner(
      'crash-a',
      (r) => r === undefined,
      'the EphemeralRunner gone, its finalizer released',
    );
    expect(sim.runner('crash-a')).toBeDefined();

    // The crash: the queued removal dies with the process.
    await first.stop();
    f = undefined;
    sim.removeFault(faultId);
    expect(sim.runner('crash-a')).toBeDefined();

    // A new leader sweeps at start and finds the registration no EphemeralRunner holds.
    g = await startControllerFixture(sim, {
      namespace: first.namespace,
      scaleSetId: first.scaleSetId,
      skipSecret: true,
      config: { orphanGraceMs: 500 },
    });
    await waitFor(() => sim.runner('crash-a') === undefined, {
      description: 'the orphaned registration removed',
    });
  });

  it('leaves alone registrations of runners that exist, and waits out the grace before removing orphans', async () => {
    const fx = (f = await startControllerFixture(sim, { config: { orphanGraceMs: 60 * 60_000 } }));
    await fx.createRunner('keep-a');
    await fx.waitForPod('keep-a', (p) => p !== undefined, 'the runner pod');
    const orphan = await new MultiClient({ retry: { maxRetries: 0 } })
      .getClientFor({
        configUrl: fx.configUrl,
        namespace: 'x',
        credentials: { kind: 'pat', token: DEFAULT_PAT },
      })
      .generateJitRunnerConfig({ name: 'nobody-holds-me', workFolder: '' }, fx.scaleSetId);
    expect(await fx.controller.sweep.sweepOnce()).toBe(0);
    expect(await fx.controller.sweep.sweepOnce()).toBe(0);
    expect(sim.runner('keep-a')).toBeDefined();
    expect(sim.runner('nobody-holds-me')?.id).toBe(orphan.runner.id);
  });
});
