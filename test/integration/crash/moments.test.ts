import {
  AutoscalingListener,
  AutoscalingListenerKind,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  EphemeralRunner,
  EphemeralRunnerKind,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
} from '@aro/api';
import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import { PodKind, SecretKind } from '@aro/kube';
import { DEFAULT_PAT } from '../../../apps/simulator/src';
import type { JobView } from '../../../apps/simulator/src';
import {
  createTestNamespace,
  runnerContainerRunning,
  runnerContainerTerminated,
  waitFor,
} from '../../harness';
import { scaled, timeScale } from '../../harness/time-scale';
import { createScaleSet } from '../ephemeral-runner/fixture';
import {
  ScaleSetScene,
  crashStage,
  expectDeletedClean,
  expectJobsSucceededOnce,
  expectNeverAboveMax,
  expectScaledToZeroClean,
  explained,
  killAt,
  scaleSetScene,
  startLeader,
  progress,
  readOrUndefined,
  stopScene,
} from './scene';
import { RunnerDeletions } from './runner-deletions';

/*
 * The controller SIGKILLed at chosen moments of a scale set's life, then replaced by a new replica
 * that must take over from what the dead one left half done: every job still runs once, on a runner
 * of its own, to success; no registration is left on the service, no runner object, pod or secret in
 * the cluster; a deleted AutoscalingRunnerSet still goes, its scale set with it.
 *
 * Each moment is detected by watching the apiserver or the simulator and the kill is sent as soon as
 * it is seen. Whether the kill landed inside the moment (and not after the controller had already
 * moved on) is checked on what the dead replica left; a case retries with a new job until it did.
 * (d) is the loss only the orphan sweep can recover: a registration whose removal was still queued
 * in memory, its runner already gone.
 */
jest.setTimeout(scaled(240_000));

/**
 * Kills per case before it counts as never having caught its moment. The moments last a few API calls
 * whatever the load, while the watch that sees them trails more the more loaded the machine: so more
 * tries at a larger time scale (a miss is said on the progress line; nothing of the product is retried).
 */
const ATTEMPTS = Math.ceil(3 * timeScale());

describe('The controller SIGKILLed at chosen moments of scale-set mode', () => {
  const stage = crashStage();
  let scene: ScaleSetScene | undefined;

  beforeEach(async () => {
    if (!stage.controller.running) await startLeader(stage);
  });
  afterEach(async () => {
    await stopScene(scene);
    scene = undefined;
  });

  async function deleteScaleSet(s: ScaleSetScene): Promise<void> {
    await stage.kube.delete(AutoscalingRunnerSetKind, s.namespace, s.arsName);
  }

  it('(a) between a runner registered on the service and its runnerId in status: no leaked registration, each job once', async () => {
    const { sim, kube } = stage;
    const s = (scene = await scaleSetScene(stage, 'crash-register', { maxRunners: 3 }));
    const jobs: JobView[] = [];
    let caught: string | undefined;
    for (let attempt = 1; attempt <= ATTEMPTS && !caught; attempt++) {
      const known = new Set(sim.registrations({ scaleSetId: s.scaleSetId }).map((r) => r.name));
      jobs.push(sim.enqueueJob({ scaleSetId: s.scaleSetId }));
      // The simulator is in-process: a 1 ms poll sees the registration before the controller has read
      // the service's answer, let alone written the jitconfig secret and the status.
      const registered = await killAt(
        stage,
        'a new registration of the scale set',
        () => sim.registrations({ scaleSetId: s.scaleSetId }).find((r) => !known.has(r.name))?.name,
        { intervalMs: 1, timeoutMs: 90_000 },
      );
      const runner = await readOrUndefined(() =>
        kube.get<EphemeralRunner>(EphemeralRunnerKind, s.namespace, registered),
      );
      if (runner && !runner.status?.runnerId) caught = registered;
      // Either side of the jitconfig secret is inside the moment; which one is said for the reader.
      const secret = await readOrUndefined(() => kube.get<V1Secret>(SecretKind, s.namespace, registered));
      progress(
        `crash (a) attempt ${attempt}: killed once ${registered} was registered; ` +
          `its status runnerId: ${runner?.status?.runnerId ?? 'none'}, jitconfig secret: ${secret ? 'written' : 'not written'}`,
      );
      await startLeader(stage);
    }
    expect(caught).toBeDefined();

    await expectJobsSucceededOnce(stage, s, jobs);
    await expectScaledToZeroClean(stage, s);
    expectNeverAboveMax(s);
    await deleteScaleSet(s);
    await expectDeletedClean(stage, s);
  });

  it('(b) while finished runners are being deleted: their registrations and pods still go, each job once', async () => {
    const { sim, kube } = stage;
    const s = (scene = await scaleSetScene(stage, 'crash-scaledown', { maxRunners: 3 }));
    const jobs: JobView[] = [];
    let caught: string | undefined;
    const deletions = await RunnerDeletions.watch(s.namespace);
    try {
      for (let attempt = 1; attempt <= ATTEMPTS && !caught; attempt++) {
        // A deletion the last replacement made while it took over is not this attempt's moment.
        const before = deletions.names();
        jobs.push(sim.enqueueJob({ scaleSetId: s.scaleSetId }), sim.enqueueJob({ scaleSetId: s.scaleSetId }));
        const deleting = await killAt(
          stage,
          'an EphemeralRunner with a deletionTimestamp',
          () => deletions.next(before),
          { intervalMs: 1, timeoutMs: 90_000 },
        );
        // Inside the moment when any runner is still being deleted now that the controller is dead: the
        // one seen, or one deleted in the same pass (finished runners are released one after another,
        // each in a few API calls; on a loaded machine the watch's event can reach this test after the
        // first one's release, while the next is under way).
        const left = (
          await kube.list<EphemeralRunner>(EphemeralRunnerKind, { namespace: s.namespace })
        ).filter((r) => r.metadata?.deletionTimestamp);
        if (left.length > 0) caught = left[0].metadata?.name;
        progress(
          `crash (b) attempt ${attempt}: killed once ${deleting} was being deleted; left being deleted: ${
            left
              .map(
                (r) =>
                  `${r.metadata?.name} (phase ${r.status?.phase ?? '-'}, finalizers ${r.metadata?.finalizers})`,
              )
              .join(', ') || 'nothing (already gone)'
          }`,
        );
        await startLeader(stage);
      }
    } finally {
      deletions.stop();
    }
    expect(caught).toBeDefined();

    await expectJobsSucceededOnce(stage, s, jobs);
    await expectScaledToZeroClean(stage, s);
    expectNeverAboveMax(s);
    await deleteScaleSet(s);
    await expectDeletedClean(stage, s);
  });

  it('(c) during AutoscalingRunnerSet deletion, the listener gone and the runner set going: the deletion completes, busy runners finish first', async () => {
    const { sim, kube } = stage;
    // Two idle runners (minRunners) and two busy ones: the runner set has runners of both kinds to
    // tear down when the controller dies.
    const s = (scene = await scaleSetScene(stage, 'crash-delete', {
      minRunners: 2,
      maxRunners: 4,
      jobDurationMs: 15_000,
    }));
    const jobs = [sim.enqueueJob({ scaleSetId: s.scaleSetId }), sim.enqueueJob({ scaleSetId: s.scaleSetId })];
    await explained(
      stage,
      () =>
        waitFor(() => jobs.every((j) => sim.job(j.jobId)?.state === 'running'), {
          description: 'both jobs running on their runners',
          timeoutMs: 90_000,
        }),
      s,
    );
    await deleteScaleSet(s);
    const runnerSet = await killAt(
      stage,
      'the listener gone while the EphemeralRunnerSet is still there',
      async () => {
        const ars = await readOrUndefined(() =>
          kube.get<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, s.namespace, s.arsName),
        );
        if (!ars?.metadata?.deletionTimestamp) return undefined;
        const listener = await readOrUndefined(() =>
          kube.get<AutoscalingListener>(AutoscalingListenerKind, stage.controllerNamespace, s.listenerName),
        );
        if (listener) return undefined;
        return (await kube.list<EphemeralRunnerSet>(EphemeralRunnerSetKind, { namespace: s.namespace }))[0]
          ?.metadata?.name;
      },
      { intervalMs: 10, timeoutMs: 90_000 },
    );
    const left = await kube.list<EphemeralRunnerSet>(EphemeralRunnerSetKind, { namespace: s.namespace });
    const runnersLeft = await kube.list<EphemeralRunner>(EphemeralRunnerKind, { namespace: s.namespace });
    progress(
      `crash (c): killed with the listener gone and ${runnerSet} there; left: ${left.length} runner set(s) ` +
        `(${left.map((e) => (e.metadata?.deletionTimestamp ? 'deleting' : 'not yet deleted')).join(', ')}), ` +
        `${runnersLeft.length} runner(s)`,
    );
    expect(left).toHaveLength(1);
    await startLeader(stage);

    await expectDeletedClean(stage, s);
    await expectJobsSucceededOnce(stage, s, jobs);
    expectNeverAboveMax(s);
  });

  // Last in the file: its replacement replica runs the orphan sweep every 2 s.
  it("(d) after a failed runner went while its registration removal was queued in memory: the next replica's orphan sweep removes it", async () => {
    const { sim, kube } = stage;
    // One EphemeralRunner of its own, as a runner set would make it, whose pod the test plays by hand.
    const namespace = await createTestNamespace('crash-queued');
    const name = 'failing-runner';
    await kube.create<V1Secret>(SecretKind, {
      metadata: { name: 'gh', namespace },
      stringData: { github_token: DEFAULT_PAT },
    });
    const scaleSetId = await createScaleSet(sim, `crash-queued-${namespace}`);
    await kube.create<EphemeralRunner>(EphemeralRunnerKind, {
      metadata: { name, namespace },
      spec: {
        githubConfigUrl: sim.configUrl({ org: 'octo' }),
        githubConfigSecret: 'gh',
        runnerScaleSetId: scaleSetId,
        spec: { containers: [{ name: 'runner', image: 'ghcr.io/actions/actions-runner:latest' }] },
      },
    } as EphemeralRunner);
    await explained(stage, () =>
      waitFor(() => readOrUndefined(() => kube.get<V1Pod>(PodKind, namespace, name)), {
        description: `the pod of ${namespace}/${name}`,
        timeoutMs: 60_000,
      }),
    );
    await runnerContainerRunning(namespace, name);
    await explained(stage, () =>
      waitFor(
        async () => (await kube.get<EphemeralRunner>(EphemeralRunnerKind, namespace, name)).status?.runnerId,
        {
          description: `the runnerId of ${namespace}/${name} in its status`,
          timeoutMs: 60_000,
        },
      ),
    );
    // The service refuses the removal for now, so it stays queued (retried in memory) after the
    // runner, whose pod has stopped, has dropped its registration finalizer and gone.
    const refusal = sim.injectFault({ route: 'DELETE agents/{id}', status: 503 });
    try {
      await runnerContainerTerminated(namespace, name, 1, { phase: 'Failed' });
      await kube.delete(EphemeralRunnerKind, namespace, name);
      await killAt(
        stage,
        `${namespace}/${name} gone while its registration is still on the service`,
        async () =>
          (await readOrUndefined(() => kube.get<EphemeralRunner>(EphemeralRunnerKind, namespace, name))) ===
            undefined && sim.runner(name) !== undefined
            ? true
            : undefined,
        { intervalMs: 10, timeoutMs: 60_000 },
      );
    } finally {
      sim.removeFault(refusal);
    }
    expect(sim.runner(name)).toBeDefined();
    progress(`crash (d): killed with ${name} gone and its registration ${sim.runner(name)?.id} left`);

    await startLeader(stage, { ORPHAN_SWEEP_INTERVAL_SECONDS: '2', ORPHAN_GRACE_SECONDS: '1' });
    await explained(stage, () =>
      waitFor(() => sim.runner(name) === undefined, {
        description: `the registration of ${name} removed by the orphan sweep`,
        timeoutMs: 60_000,
      }),
    );
    progress('crash (d): the registration is gone');
    expect(await readOrUndefined(() => kube.get<V1Pod>(PodKind, namespace, name))).toBeUndefined();
    expect(await readOrUndefined(() => kube.get<V1Secret>(SecretKind, namespace, name))).toBeUndefined();
  });
});
