import { ApiException, CoreV1Api, type V1Pod, type V1PodDisruptionBudget } from '@kubernetes/client-node';
import { EphemeralRunnerKind } from '@aro/api';
import {
  BUSY_RUNNER_LABEL,
  BUSY_RUNNERS_PDB_NAME,
  DO_NOT_DISRUPT_ANNOTATION,
  PodDisruptionBudgetKind,
  SAFE_TO_EVICT_ANNOTATION,
} from '@aro/controllers';
import {
  finishPodDeletion,
  hasGarbageCollector,
  runnerContainerRunning,
  runnerContainerTerminated,
  setPodStatus,
  testKubeConfig,
  waitFor,
} from '../../harness';
import {
  ControllerFixture,
  controllerSuite,
  FixtureOptions,
  idleReconcileCount,
  waitForReconcileSince,
} from './fixture';

/**
 * Busy runners survive voluntary disruption (libs/controllers/src/ephemeral-runner/eviction-protection.ts and shared/busy-marks.ts):
 * the test drains a node as `kubectl drain` does, through the Eviction API, and plays the kubelet.
 */
describe('EphemeralRunner eviction protection', () => {
  const suite = controllerSuite();
  let f: ControllerFixture;

  /** The Eviction API's answer for the pod: 201 when it was evicted, else the refusal's HTTP status. */
  async function evict(name: string): Promise<number> {
    const api = testKubeConfig().makeApiClient(CoreV1Api);
    try {
      await api.createNamespacedPodEviction({
        name,
        namespace: f.namespace,
        body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace: f.namespace } },
      });
      return 201;
    } catch (err) {
      if (err instanceof ApiException) return err.code;
      throw err;
    }
  }

  async function idleRunner(name: string): Promise<void> {
    await f.createRunner(name);
    await f.waitForPod(name, (p) => p !== undefined, 'the runner pod');
    await runnerContainerRunning(f.namespace, name);
    await f.waitForRunner(name, (r) => r?.status?.phase === 'Pending', 'phase Pending');
  }

  /** The service starts a job on the runner and the listener reports it, as in a real scale set. */
  async function startJob(name: string): Promise<string> {
    const job = suite.sim.startJob(name, { displayName: 'build' });
    await f.kube.mergePatchStatus(EphemeralRunnerKind, f.namespace, name, { status: { jobId: job.jobId } });
    await f.waitForRunner(name, (r) => r?.status?.phase === 'Running', 'phase Running');
    return job.jobId;
  }

  const busyMarks = (pod: V1Pod | undefined) => ({
    label: pod?.metadata?.labels?.[BUSY_RUNNER_LABEL],
    safeToEvict: pod?.metadata?.annotations?.[SAFE_TO_EVICT_ANNOTATION],
    doNotDisrupt: pod?.metadata?.annotations?.[DO_NOT_DISRUPT_ANNOTATION],
  });

  async function start(opts: FixtureOptions): Promise<void> {
    f = await suite.start(opts);
  }

  it('drains a node: the idle runner goes (its registration removed), the busy one stays until its job ends, no job fails', async () => {
    await start({ config: { evictionProtection: true } });
    await idleRunner('ev-busy');
    await idleRunner('ev-idle');
    const jobId = await startJob('ev-busy');

    const busyPod = await f.waitForPod(
      'ev-busy',
      (p) => p?.metadata?.labels?.[BUSY_RUNNER_LABEL] === 'true',
      'the busy label on the pod of the runner executing a job',
    );
    expect(busyMarks(busyPod)).toEqual({ label: 'true', safeToEvict: 'false', doNotDisrupt: 'true' });
    expect(busyMarks(await f.pod('ev-idle'))).toEqual({
      label: undefined,
      safeToEvict: undefined,
      doNotDisrupt: undefined,
    });
    const pdb = await f.kube.get<V1PodDisruptionBudget>(
      PodDisruptionBudgetKind,
      f.namespace,
      BUSY_RUNNERS_PDB_NAME,
    );
    expect(pdb.spec?.selector?.matchLabels).toEqual({ [BUSY_RUNNER_LABEL]: 'true' });
    if (hasGarbageCollector()) {
      // kube-controller-manager's disruption controller computes the budget, as in a cluster: the busy
      // pod is counted healthy and no disruption is allowed.
      await waitFor(
        async () => {
          const s = (
            await f.kube.get<V1PodDisruptionBudget>(
              PodDisruptionBudgetKind,
              f.namespace,
              BUSY_RUNNERS_PDB_NAME,
            )
          ).status;
          return (
            s?.observedGeneration === pdb.metadata?.generation &&
            s?.expectedPods === 1 &&
            s.currentHealthy === 1
          );
        },
        { description: 'the disruption controller to count the busy pod in the budget' },
      );
      const status = (
        await f.kube.get<V1PodDisruptionBudget>(PodDisruptionBudgetKind, f.namespace, BUSY_RUNNERS_PDB_NAME)
      ).status;
      expect(status?.disruptionsAllowed).toBe(0);
    }

    // The drain evicts both pods. The idle runner's goes: without the eviction webhook (its own test,
    // eviction-webhook.test.ts) its registration is removed while the pod is still terminating, and
    // the runner is deleted.
    expect(await evict('ev-idle')).toBe(201);
    await waitFor(() => suite.sim.runner('ev-idle') === undefined, {
      description: 'the idle registration removed',
    });
    expect((await f.pod('ev-idle'))?.metadata?.deletionTimestamp).toBeDefined();
    await f.waitForRunner('ev-idle', (r) => r === undefined, 'the idle runner deleted');
    await finishPodDeletion(f.namespace, 'ev-idle');

    // The busy runner's pod refuses, however often the drain retries.
    for (let attempt = 0; attempt < 3; attempt++) expect(await evict('ev-busy')).toBe(429);
    expect((await f.pod('ev-busy'))?.metadata?.deletionTimestamp).toBeUndefined();
    expect(suite.sim.job(jobId)?.state).not.toBe('completed');

    // The job ends; the runner exits 0 and its pod goes with it.
    suite.sim.completeJob(jobId, 'succeeded');
    suite.sim.runnerExited('ev-busy', 0);
    await runnerContainerTerminated(f.namespace, 'ev-busy', 0, { phase: 'Succeeded' });
    await f.waitForRunner('ev-busy', (r) => r === undefined, 'the busy runner done and deleted');
    await f.waitForPod('ev-busy', (p) => p === undefined, 'the busy pod gone');
    expect(suite.sim.job(jobId)?.result).toBe('succeeded');
  });

  it('lifts the protection from a pod that lingers after its runner exited, so the drain goes on', async () => {
    await start({ config: { evictionProtection: true } });
    await f.createRunner('ev-linger', (spec) => {
      spec.spec?.containers.push({ name: 'sidecar', image: 'docker:dind' });
    });
    await f.waitForPod('ev-linger', (p) => p !== undefined, 'the runner pod');
    await runnerContainerRunning(f.namespace, 'ev-linger');
    await f.waitForRunner('ev-linger', (r) => r?.status?.phase === 'Pending', 'phase Pending');
    const jobId = await startJob('ev-linger');
    await f.waitForPod(
      'ev-linger',
      (p) => busyMarks(p).label === 'true',
      'the busy label on the pod of the runner executing a job',
    );

    // The runner process exits while the service still holds its job (the job's end not reported
    // yet), and the sidecar keeps the pod running: the runner is deleted, but its finalizer keeps the
    // pod until the service lets go of the job. Nothing in the pod can execute a job any more.
    await runnerContainerTerminated(f.namespace, 'ev-linger', 1);
    const lingering = await f.waitForPod(
      'ev-linger',
      (p) => busyMarks(p).label === undefined,
      'the busy label removed from the lingering pod',
    );
    expect(busyMarks(lingering)).toEqual({
      label: undefined,
      safeToEvict: undefined,
      doNotDisrupt: undefined,
    });
    expect(lingering?.metadata?.deletionTimestamp).toBeUndefined();
    expect(suite.sim.runner('ev-linger')?.jobId).toBe(jobId);
    expect(await evict('ev-linger')).toBe(201);

    suite.sim.completeJob(jobId, 'failed');
    await finishPodDeletion(f.namespace, 'ev-linger');
    await f.waitForRunner('ev-linger', (r) => r === undefined, 'the runner deleted');
    await waitFor(() => suite.sim.runner('ev-linger') === undefined, {
      description: 'the registration removed once the service let go of the job',
    });
  });

  it('keeps a busy runner deleted while the service holds its job protected until its runner container exits', async () => {
    await start({ config: { evictionProtection: true } });
    // Two sidecars: one exits while the runner still runs, one keeps the pod running once it has exited.
    await f.createRunner('ev-deleted', (spec) => {
      spec.spec?.containers.push({ name: 'log-shipper', image: 'fluent/fluent-bit' });
      spec.spec?.containers.push({ name: 'dind', image: 'docker:dind' });
    });
    await f.waitForPod('ev-deleted', (p) => p !== undefined, 'the runner pod');
    await runnerContainerRunning(f.namespace, 'ev-deleted');
    await f.waitForRunner('ev-deleted', (r) => r?.status?.phase === 'Pending', 'phase Pending');
    const jobId = await startJob('ev-deleted');
    await f.waitForPod(
      'ev-deleted',
      (p) => busyMarks(p).label === 'true',
      'the busy label on the pod of the runner executing a job',
    );
    const protectedMarks = { label: 'true', safeToEvict: 'false', doNotDisrupt: 'true' };

    /**
     * Evidence the controller looked at the runner being deleted: it asked the service to let the
     * runner go (one more removal call, refused with JobStillRunning) and finished that pass, which is
     * the one that lifts the marks when the runner process has exited.
     */
    async function serviceAskedAgain(what: string, change: () => Promise<unknown>): Promise<void> {
      const asked = suite.sim.callCount('DELETE agents/{id}');
      const since = await idleReconcileCount(f);
      await change();
      await waitFor(() => suite.sim.callCount('DELETE agents/{id}') > asked, {
        description: `the service asked to let the runner go after ${what}`,
      });
      await waitForReconcileSince(f, since, what);
      expect(suite.sim.runner('ev-deleted')?.jobId).toBe(jobId);
    }

    // The runner is deleted (its set scaled down, or a user) mid-job: the service refuses to let it go,
    // so its finalizer keeps the pod, and the pod keeps refusing eviction.
    await serviceAskedAgain('the runner was deleted', () =>
      f.kube.delete(EphemeralRunnerKind, f.namespace, 'ev-deleted'),
    );
    expect((await f.runner('ev-deleted'))?.metadata?.deletionTimestamp).toBeDefined();
    let pod = await f.pod('ev-deleted');
    expect(pod?.metadata?.deletionTimestamp).toBeUndefined();
    expect(busyMarks(pod)).toEqual(protectedMarks);
    expect(await evict('ev-deleted')).toBe(429);

    // Another container exits while the runner container still runs: the job may still be executing.
    await serviceAskedAgain('the log shipper exited', () =>
      setPodStatus(f.namespace, 'ev-deleted', (p) => ({
        ...p.status,
        containerStatuses: (p.status?.containerStatuses ?? []).map((c) =>
          c.name === 'log-shipper'
            ? {
                ...c,
                ready: false,
                state: { terminated: { exitCode: 0, reason: 'Completed', finishedAt: new Date() } },
              }
            : c,
        ),
      })),
    );
    pod = await f.pod('ev-deleted');
    expect(pod?.status?.containerStatuses?.find((c) => c.name === 'runner')?.state?.running).toBeDefined();
    expect(busyMarks(pod)).toEqual(protectedMarks);
    expect(await evict('ev-deleted')).toBe(429);
    expect((await f.pod('ev-deleted'))?.metadata?.deletionTimestamp).toBeUndefined();

    // The runner container exits (dind keeps the pod running): nothing in the pod can execute a job,
    // so the marks go and the drain may take the pod while the finalizer waits for the service.
    await runnerContainerTerminated(f.namespace, 'ev-deleted', 1);
    pod = await f.waitForPod(
      'ev-deleted',
      (p) => busyMarks(p).label === undefined,
      'the busy label lifted once the runner container exited',
    );
    expect(busyMarks(pod)).toEqual({ label: undefined, safeToEvict: undefined, doNotDisrupt: undefined });
    expect(suite.sim.runner('ev-deleted')?.jobId).toBe(jobId);
    expect(await evict('ev-deleted')).toBe(201);

    suite.sim.completeJob(jobId, 'failed');
    await finishPodDeletion(f.namespace, 'ev-deleted');
    await f.waitForRunner('ev-deleted', (r) => r === undefined, 'the runner deleted');
    await waitFor(() => suite.sim.runner('ev-deleted') === undefined, {
      description: 'the registration removed once the service let go of the job',
    });
  });

  it('lets a busy runner be evicted when the protection is off', async () => {
    await start({ config: { evictionProtection: false } });
    await idleRunner('ev-off');
    const jobId = await startJob('ev-off');
    expect(busyMarks(await f.pod('ev-off')).label).toBeUndefined();
    expect(await evict('ev-off')).toBe(201);
    expect((await f.pod('ev-off'))?.metadata?.deletionTimestamp).toBeDefined();
    // The job is lost with the pod: the runner fails and is deleted, as for any pod killed mid-job.
    suite.sim.completeJob(jobId, 'failed');
    await runnerContainerTerminated(f.namespace, 'ev-off', 143, { phase: 'Failed' });
    await f.waitForRunner('ev-off', (r) => r === undefined, 'the runner deleted');
  });
});
