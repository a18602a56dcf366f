import type { RunningSimulator } from '../../../apps/simulator/src';
import { waitFor } from '../../harness';
import { ListenerFixture, listenerFixture, metricValue, scrape, startListenerTestSimulator } from './fixture';

describe('The listener against the control plane and the simulator', () => {
  let sim: RunningSimulator;
  let fx: ListenerFixture | undefined;

  beforeAll(async () => {
    sim = await startListenerTestSimulator();
  });
  afterAll(async () => {
    await sim?.stop();
  });
  afterEach(async () => {
    await fx?.stopAll();
    fx = undefined;
  });

  it('opens a session, acquires offered jobs and patches replicas/patchID on the EphemeralRunnerSet', async () => {
    fx = await listenerFixture(sim, { minRunners: 1, maxRunners: 10 });
    const listener = await fx.start();
    const session = await waitFor(() => sim.sessions().find((s) => s.scaleSetId === fx!.scaleSetId), {
      description: 'a message session on the simulator',
    });
    expect(session.ownerName).toMatch(/^listener-pod-/);
    // minRunners is headroom on top of the (zero) assigned jobs.
    await fx.waitForSpec((s) => s.replicas === 1, 'replicas = minRunners (1)');
    expect((await scrape(listener, '/readyz')).status).toBe(200);

    const jobs = [1, 2, 3].map(() => sim.enqueueJob({ scaleSetId: fx!.scaleSetId }));
    await waitFor(() => jobs.every((j) => sim.job(j.jobId)?.state === 'acquired'), {
      description: 'the three jobs acquired by the listener',
    });
    const ers = await fx.waitForSpec((s) => s.replicas === 4, 'replicas = 3 assigned + 1 min');
    expect(ers.spec.patchID).toBeGreaterThan(0);
    // The session told the service how many runners the set may have.
    expect(sim.sessions().find((s) => s.scaleSetId === fx!.scaleSetId)?.maxCapacity).toBe(10);

    // The gauge is set once the patch's answer is back, a moment after the apiserver shows it.
    const metrics = await waitFor(
      async () => {
        const body = (await scrape(listener)).body;
        return /gha_desired_runners\{[^}]*\} 4/.test(body) ? body : undefined;
      },
      { description: 'gha_desired_runners at 4' },
    );
    expect(
      metricValue(
        metrics,
        'gha_max_runners{enterprise="",organization="octo",repository="",name="arc-set",namespace="' +
          fx.namespace +
          '"}',
      ),
    ).toBe(10);
    expect(metrics).toMatch(/gha_desired_runners\{[^}]*\} 4/);
    expect(metricValue(metrics, 'aro_listener_jobs_acquired_total')).toBe(3);
  });

  it('records a started job on its EphemeralRunner status, and ignores a runner that is gone', async () => {
    fx = await listenerFixture(sim, { maxRunners: 5 });
    await fx.createRunner('runner-a');
    const listener = await fx.start();
    await waitFor(() => sim.sessions().some((s) => s.scaleSetId === fx!.scaleSetId), {
      description: 'a session',
    });
    const job = sim.enqueueJob({
      scaleSetId: fx.scaleSetId,
      displayName: 'build (linux)',
      repo: 'octo/hello',
    });
    await waitFor(() => sim.job(job.jobId)?.state === 'acquired', { description: 'the job acquired' });
    sim.runnerConnected('runner-a');
    const runner = await waitFor(
      async () => {
        const r = await fx!.runner('runner-a');
        return r?.status?.jobId ? r : undefined;
      },
      { description: 'the job recorded on runner-a' },
    );
    const j = sim.job(job.jobId)!;
    expect(runner.status).toMatchObject({
      jobRequestId: j.runnerRequestId,
      jobRepositoryName: 'octo/hello',
      jobId: j.jobId,
      workflowRunId: j.workflowRunId,
      jobWorkflowRef: j.workflowRef,
      jobDisplayName: 'build (linux)',
    });

    // A runner registered on the service without an EphemeralRunner: its JobStarted finds nothing.
    await import('./fixture').then((m) => m.registerRunner(sim, fx!.scaleSetId, 'runner-ghost'));
    const ghostJob = sim.enqueueJob({ scaleSetId: fx.scaleSetId });
    await waitFor(() => sim.job(ghostJob.jobId)?.state === 'acquired', {
      description: 'the second job acquired',
    });
    sim.runnerConnected('runner-ghost');
    await waitFor(
      async () =>
        metricValue(
          (await scrape(listener)).body,
          'aro_listener_runner_status_patches_total{result="not_found"}',
        ) === 1,
      { description: 'the NotFound status patch counted' },
    );
    const metrics = (await scrape(listener)).body;
    expect(metrics).toMatch(
      /gha_started_jobs_total\{enterprise="",organization="octo",repository="hello",job_name="build \(linux\)",event_name="push"\} 1/,
    );
    expect(metricValue(metrics, 'aro_listener_runner_status_patches_total{result="patched"}')).toBe(1);
  });

  it('converges with patchID 0 once idle, and its gauges fall back to 0', async () => {
    fx = await listenerFixture(sim, { maxRunners: 5 });
    await fx.createRunner('runner-b');
    const listener = await fx.start();
    await waitFor(() => sim.sessions().some((s) => s.scaleSetId === fx!.scaleSetId), {
      description: 'a session',
    });
    sim.runnerConnected('runner-b');
    const job = sim.enqueueJob({ scaleSetId: fx.scaleSetId });
    await waitFor(() => sim.job(job.jobId)?.state === 'running', {
      description: 'the job running on runner-b',
    });
    await fx.waitForSpec((s) => s.replicas === 1 && s.patchID > 0, 'replicas 1 for the running job');
    await waitFor(async () => /gha_busy_runners\{[^}]*\} 1/.test((await scrape(listener)).body), {
      description: 'gha_busy_runners at 1',
    });
    sim.completeJob(job.jobId);
    // The JobCompleted message still counts the runner, which has not exited yet.
    await waitFor(
      async () => {
        const m = (await scrape(listener)).body;
        return /gha_completed_jobs_total\{[^}]*\} 1/.test(m) && /gha_registered_runners\{[^}]*\} 1/.test(m);
      },
      { description: 'the completion seen with the runner still registered' },
    );
    // Its exit sends no message: only re-reading the statistics on idle polls shows it gone.
    sim.runnerExited('runner-b', 0);
    // Nothing happens any more: the next empty polls force convergence to minRunners with patchID 0.
    await fx.waitForSpec((s) => s.replicas === 0 && s.patchID === 0, 'replicas 0 with patchID 0');
    await waitFor(
      async () => {
        const m = (await scrape(listener)).body;
        return (
          /gha_busy_runners\{[^}]*\} 0/.test(m) &&
          /gha_registered_runners\{[^}]*\} 0/.test(m) &&
          /gha_assigned_jobs\{[^}]*\} 0/.test(m)
        );
      },
      { description: 'busy/registered/assigned gauges back to 0' },
    );
    const m = (await scrape(listener)).body;
    expect(m).toMatch(/gha_completed_jobs_total\{[^}]*job_result="succeeded"\} 1/);
    expect(m).toMatch(/gha_job_execution_duration_seconds_count\{[^}]*\} 1/);
    // ARO's queue wait (per scale set) and cost (per repository and workflow) from the same messages.
    expect(m).toMatch(/aro_job_queue_wait_seconds_count\{name="[^"]+",namespace="[^"]+"\} 1/);
    expect(m).toMatch(/aro_job_runner_seconds_total\{[^}]*repository="[^"]+"[^}]*\} \d/);
  });

  it('acquires nothing at maxRunners 0, and leaves the job for the service to offer elsewhere', async () => {
    fx = await listenerFixture(sim, { maxRunners: 0 });
    const listener = await fx.start();
    await waitFor(() => sim.sessions().some((s) => s.scaleSetId === fx!.scaleSetId), {
      description: 'a session',
    });
    const job = sim.enqueueJob({ scaleSetId: fx.scaleSetId });
    // Evidence the listener saw the offer: it acknowledged the message and counted the refusal.
    await waitFor(
      async () =>
        metricValue(
          (await scrape(listener)).body,
          'aro_listener_jobs_not_acquired_total{reason="capacity"}',
        ) === 1,
      { description: 'the offered job counted as not acquired for capacity' },
    );
    expect(sim.job(job.jobId)?.state).toBe('available');
    expect(metricValue((await scrape(listener)).body, 'aro_listener_jobs_acquired_total')).toBe(0);
    expect((await fx.ers()).spec.replicas).toBe(0);
  });
});
