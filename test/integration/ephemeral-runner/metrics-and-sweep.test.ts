import { isDeepStrictEqual } from 'node:util';
import {
  EPHEMERAL_RUNNER_ACTIONS_FINALIZER,
  type EphemeralRunner,
  EphemeralRunnerKind,
  EphemeralRunnerSetKind,
} from '@aro/api';
import { isConflict } from '@aro/kube';
import { MultiClient } from '@aro/actions';
import { FIRST_AUDIT_DELAY_MS } from '@aro/controllers';
import { DEFAULT_PAT, RunningSimulator } from '../../../apps/simulator/src';
import {
  createTestNamespace,
  runnerContainerRunning,
  runnerContainerTerminated,
  waitFor,
} from '../../harness';
import { ControllerFixture, startControllerFixture, startTestSimulator } from './fixture';

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

  it('removes a registration left behind by a crash, with no EphemeralRunner or EphemeralRunnerSet left naming its scale set', async () => {
    // The first controller loses every removal: the service answers 503 until it is gone.
    const first = (f = await startControllerFixture(sim, { config: { unregistrationDrainTimeoutMs: 0 } }));
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

    // The crash: the queued removal dies with the process (the in-process stand-in for kill -9 drops
    // the queue without a drain). Nothing in the cluster names the scale set any more.
    await first.stop();
    f = undefined;
    sim.removeFault(faultId);
    expect(sim.runner('crash-a')).toBeDefined();
    expect(await first.kube.list(EphemeralRunnerKind, { namespace: first.namespace })).toHaveLength(0);
    expect(await first.kube.list(EphemeralRunnerSetKind, { namespace: first.namespace })).toHaveLength(0);

    // A new leader sweeps at start; the scale set ledger, not the cluster's objects, names the scale set.
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

  it('removes the registration of an Outdated runner whose queued removal a crash lost, while the runner stays', async () => {
    const first = (f = await startControllerFixture(sim, { config: { unregistrationDrainTimeoutMs: 0 } }));
    await first.createRunner('crash-o');
    await first.waitForPod('crash-o', (p) => p !== undefined, 'the runner pod');
    await runnerContainerRunning(first.namespace, 'crash-o');
    await first.waitForRunner('crash-o', (r) => r?.status?.phase === 'Pending', 'phase Pending');
    const faultId = sim.injectFault({ route: 'DELETE agents/{id}', status: 503 });
    await runnerContainerTerminated(first.namespace, 'crash-o', 7, { phase: 'Failed' });
    await first.waitForRunner(
      'crash-o',
      (r) =>
        r?.status?.phase === 'Outdated' &&
        !(r.metadata?.finalizers ?? []).includes(EPHEMERAL_RUNNER_ACTIONS_FINALIZER),
      'Outdated, its registration released to the queue',
    );
    await first.stop();
    f = undefined;
    sim.removeFault(faultId);
    expect(sim.runner('crash-o')).toBeDefined();

    g = await startControllerFixture(sim, {
      namespace: first.namespace,
      scaleSetId: first.scaleSetId,
      skipSecret: true,
      config: { orphanGraceMs: 500 },
    });
    await waitFor(() => sim.runner('crash-o') === undefined, {
      description: 'the released registration of the Outdated runner removed',
    });
    expect((await g.runner('crash-o'))?.status?.phase).toBe('Outdated');
  });

  it('removes the registrations of finished runners that another finalizer keeps in the apiserver: one lost in a crash, one never deregistered', async () => {
    const FOREIGN_FINALIZER = 'backup.example.com/snapshot';
    const first = (f = await startControllerFixture(sim, { config: { unregistrationDrainTimeoutMs: 0 } }));
    /** A registered runner that another party's finalizer (a backup tool, a GitOps agent) keeps once deleted. */
    async function heldRunner(name: string): Promise<void> {
      await first.createRunner(name);
      await first.waitForPod(name, (p) => p !== undefined, 'the runner pod');
      await runnerContainerRunning(first.namespace, name);
      await first.waitForRunner(
        name,
        (r) => r?.status?.phase === 'Pending' && !!r.status.runnerId,
        'phase Pending, registered',
      );
      await waitFor(
        async () => {
          const r = await first.runner(name);
          try {
            // Pinned to the version read, so that the finalizers this controller set are kept.
            await first.kube.mergePatch(EphemeralRunnerKind, first.namespace, name, {
              metadata: {
                resourceVersion: r?.metadata?.resourceVersion,
                finalizers: [...(r?.metadata?.finalizers ?? []), FOREIGN_FINALIZER],
              },
            });
            return true;
          } catch (err) {
            if (isConflict(err)) return false;
            throw err;
          }
        },
        { description: `the foreign finalizer on ${name}` },
      );
    }
    const heldOnlyByForeignFinalizer = (r: EphemeralRunner | undefined) =>
      !!r?.metadata?.deletionTimestamp && isDeepStrictEqual(r.metadata.finalizers, [FOREIGN_FINALIZER]);

    // A runner whose pod fails mid-job is deleted (phase still Running); its removal is queued, and the
    // service refuses it for now, so it stays queued in memory while the runner's finalizers go.
    await heldRunner('held-midjob');
    const job = sim.startJob('held-midjob', { displayName: 'build' });
    await first.kube.mergePatchStatus(EphemeralRunnerKind, first.namespace, 'held-midjob', {
      status: { jobId: job.jobId },
    });
    await first.waitForRunner('held-midjob', (r) => r?.status?.phase === 'Running', 'phase Running');
    const faultId = sim.injectFault({ route: 'DELETE agents/{id}', status: 503 });
    await runnerContainerTerminated(first.namespace, 'held-midjob', 1, { phase: 'Failed' });
    await first.waitForRunner(
      'held-midjob',
      heldOnlyByForeignFinalizer,
      'the runner deleted, its removal queued, held by the foreign finalizer alone',
    );
    // A runner that exited 0 but whose registration stayed on the service (its own removal failed on
    // the way out): Succeeded, deleted by the controller without asking the service.
    await heldRunner('held-succeeded');
    await runnerContainerTerminated(first.namespace, 'held-succeeded', 0, { phase: 'Succeeded' });
    await first.waitForRunner(
      'held-succeeded',
      (r) => heldOnlyByForeignFinalizer(r) && r?.status?.phase === 'Succeeded',
      'Succeeded, deleted, held by the foreign finalizer alone',
    );

    // The crash: the queued removal dies with the process.
    await first.stop();
    f = undefined;
    sim.removeFault(faultId);
    sim.completeJob(job.jobId, 'failed');
    expect(sim.runner('held-midjob')).toBeDefined();
    expect(sim.runner('held-succeeded')).toBeDefined();

    // The next leader's sweep: both runners are still in the apiserver, but neither holds its
    // registration any more (the controller's finalizers are gone), so both registrations are orphans.
    g = await startControllerFixture(sim, {
      namespace: first.namespace,
      scaleSetId: first.scaleSetId,
      skipSecret: true,
      config: { orphanGraceMs: 500 },
    });
    for (const name of ['held-succeeded', 'held-midjob']) {
      await waitFor(() => sim.runner(name) === undefined, {
        description: `the registration of ${name} removed by the sweep`,
      });
    }
    for (const name of ['held-midjob', 'held-succeeded']) {
      expect(heldOnlyByForeignFinalizer(await g.runner(name))).toBe(true);
      // The other party lets go; the runner leaves the apiserver.
      await g.kube.mergePatch(EphemeralRunnerKind, g.namespace, name, { metadata: { finalizers: null } });
    }
  });

  it('leaves alone registrations of runners that exist once the grace has passed, and removes the orphan beside them', async () => {
    const fx = (f = await startControllerFixture(sim, { config: { orphanGraceMs: 0 } }));
    const listingsBefore = sim.callCount('GET agents');
    await fx.createRunner('keep-a');
    await fx.waitForPod('keep-a', (p) => p !== undefined, 'the runner pod');
    // The new scale set's first audit (its own pass, soon after it entered the ledger) comes before the
    // leak, so that only the passes below can see the orphan.
    await waitFor(() => sim.callCount('GET agents') > listingsBefore, {
      description: "the scale set's first audit listing its registrations",
      timeoutMs: FIRST_AUDIT_DELAY_MS + 20_000,
    });
    const orphan = await new MultiClient({ retry: { maxRetries: 0 } })
      .getClientFor({
        configUrl: fx.configUrl,
        namespace: 'x',
        credentials: { kind: 'pat', token: DEFAULT_PAT },
      })
      .generateJitRunnerConfig({ name: 'nobody-holds-me', workFolder: '' }, fx.scaleSetId);
    expect(await fx.controller.sweep.sweepOnce()).toBe(1);
    await waitFor(() => sim.runner('nobody-holds-me') === undefined, {
      description: `the orphan ${orphan.runner.id} removed`,
    });
    expect(await fx.controller.sweep.sweepOnce()).toBe(0);
    expect(sim.runner('keep-a')).toBeDefined();
  });

  it('waits out the grace before removing an orphan', async () => {
    const fx = (f = await startControllerFixture(sim, { config: { orphanGraceMs: 60 * 60_000 } }));
    await fx.createRunner('grace-a');
    await fx.waitForPod('grace-a', (p) => p !== undefined, 'the runner pod');
    const orphan = await new MultiClient({ retry: { maxRetries: 0 } })
      .getClientFor({
        configUrl: fx.configUrl,
        namespace: 'x',
        credentials: { kind: 'pat', token: DEFAULT_PAT },
      })
      .generateJitRunnerConfig({ name: 'orphan-in-grace', workFolder: '' }, fx.scaleSetId);
    expect(await fx.controller.sweep.sweepOnce()).toBe(0);
    expect(await fx.controller.sweep.sweepOnce()).toBe(0);
    expect(sim.runner('orphan-in-grace')?.id).toBe(orphan.runner.id);
  });

  it("keeps the registration of another namespace's live runner on a shared scale set (controller watching every namespace)", async () => {
    // A controller whose sweep watches every namespace (its informer stays on its own namespace,
    // where another controller reconciles the other one's runners), its ledger in its namespace.
    const namespace = await createTestNamespace('er');
    const a = (f = await startControllerFixture(sim, {
      namespace,
      config: { namespace: '', ledgerNamespace: namespace, orphanGraceMs: 0 },
    }));
    const b = (g = await startControllerFixture(sim, { scaleSetId: a.scaleSetId }));
    await b.createRunner('shared-b');
    await b.waitForPod('shared-b', (p) => p !== undefined, 'the runner pod in the other namespace');
    await a.createRunner('shared-a');
    await a.waitForPod('shared-a', (p) => p !== undefined, 'the runner pod');
    expect(await a.controller.sweep.sweepOnce()).toBe(0);
    expect(await a.controller.sweep.sweepOnce()).toBe(0);
    expect(sim.runner('shared-a')).toBeDefined();
    expect(sim.runner('shared-b')).toBeDefined();
  });

  it('does not sweep a scale set shared with a namespace it does not watch', async () => {
    const ledgerNamespace = await createTestNamespace('ledger');
    const a = (f = await startControllerFixture(sim, { config: { orphanGraceMs: 0, ledgerNamespace } }));
    const b = (g = await startControllerFixture(sim, {
      scaleSetId: a.scaleSetId,
      config: { orphanGraceMs: 0, ledgerNamespace },
    }));
    await a.createRunner('scoped-a');
    await a.waitForPod('scoped-a', (p) => p !== undefined, 'the runner pod');
    await b.createRunner('scoped-b');
    await b.waitForPod('scoped-b', (p) => p !== undefined, 'the runner pod in the other namespace');
    expect(await a.controller.sweep.sweepOnce()).toBe(0);
    expect(await b.controller.sweep.sweepOnce()).toBe(0);
    expect(sim.runner('scoped-a')).toBeDefined();
    expect(sim.runner('scoped-b')).toBeDefined();
  });
});
