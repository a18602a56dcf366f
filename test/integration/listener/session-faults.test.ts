import { DEFAULT_PAT, type RunningSimulator } from '../../../apps/simulator/src';
import { ActionsServiceClient } from '@aro/actions';
import { waitFor } from '../../harness';
import { ListenerFixture, listenerFixture, metricValue, scrape, startListenerTestSimulator } from './fixture';

/**
 * Session and poll faults injected in the simulator; in each the listener recovers by itself and every
 * job offered meanwhile is acquired (none lost).
 */
describe('Listener recovery from session and poll faults', () => {
  let sim: RunningSimulator;
  let fx: ListenerFixture | undefined;

  beforeAll(async () => {
    sim = await startListenerTestSimulator();
  });
  afterAll(async () => {
    await sim?.stop();
  });
  afterEach(async () => {
    sim.clearFaults();
    sim.setTiming({ sessionIdleTimeoutMs: 120_000 });
    await fx?.stopAll();
    fx = undefined;
  });

  const sessionOf = (fxx: ListenerFixture) => sim.sessions().find((s) => s.scaleSetId === fxx.scaleSetId);
  const acquired = (jobId: string) => {
    const state = sim.job(jobId)?.state;
    return state === 'acquired' || state === 'running' || state === 'completed';
  };

  it('waits out "already has an active session" (409) until the stale session expires, without crashing', async () => {
    fx = await listenerFixture(sim);
    // A listener that died without deleting its session: it never polls again.
    const stale = new ActionsServiceClient({
      configUrl: sim.configUrl({ org: 'octo' }),
      credentials: { kind: 'pat', token: DEFAULT_PAT },
    });
    const staleSession = await stale.createMessageSession(fx.scaleSetId, 'dead-listener');
    await stale.close();
    const job = sim.enqueueJob({ scaleSetId: fx.scaleSetId });
    const logs: string[] = [];
    const listener = await fx.start({}, 'new-listener', logs);
    await waitFor(
      async () =>
        (metricValue(
          (await scrape(listener)).body,
          'aro_listener_session_creates_total{result="conflict"}',
        ) ?? 0) >= 2,
      { description: 'at least two create attempts refused with 409' },
    );
    expect((await scrape(listener, '/readyz')).status).toBe(503);
    expect((await scrape(listener, '/healthz')).status).toBe(200);
    expect(
      logs.some(
        (l) => l.includes('already has an active session') && l.includes(fx!.config.runner_scale_set_name!),
      ),
    ).toBe(true);
    // The stale session goes idle past the service's bound; the next attempt takes over.
    sim.setTiming({ sessionIdleTimeoutMs: 1_000 });
    await waitFor(() => sessionOf(fx!)?.ownerName === 'new-listener', {
      description: 'the listener owning the session',
    });
    expect(sessionOf(fx)?.sessionId).not.toBe(staleSession.sessionId);
    await waitFor(() => acquired(job.jobId), { description: 'the job queued during the conflict acquired' });
    await waitFor(async () => (await scrape(listener, '/readyz')).status === 200, {
      description: '/readyz 200',
    });
  });

  it('opens a new session when a refresh answers 404, keeping the last message id', async () => {
    fx = await listenerFixture(sim);
    const listener = await fx.start();
    const first = await waitFor(() => sessionOf(fx!), { description: 'a session' });
    const before = sim.enqueueJob({ scaleSetId: fx.scaleSetId });
    await waitFor(() => acquired(before.jobId), { description: 'a first job acquired' });
    await waitFor(() => (sessionOf(fx!)?.acknowledgedMessageId ?? 0) > 0, {
      description: 'a message acknowledged',
    });
    const lastAcked = sessionOf(fx)!.acknowledgedMessageId;
    sim.injectFault({ route: 'PATCH runnerscalesets/{id}/sessions/{sessionId}', status: 404, times: 1 });
    sim.expireQueueTokens();
    const second = await waitFor(
      () => {
        const s = sessionOf(fx!);
        return s && s.sessionId !== first.sessionId ? s : undefined;
      },
      { description: 'a new session after the 404' },
    );
    const after = sim.enqueueJob({ scaleSetId: fx.scaleSetId });
    await waitFor(() => acquired(after.jobId), { description: 'a job offered to the new session acquired' });
    // The new session was told what was already processed: its acknowledgements start past the old ones.
    await waitFor(() => (sessionOf(fx!)?.acknowledgedMessageId ?? 0) > lastAcked, {
      description: 'the new session acknowledging past the last message id',
    });
    expect(sim.sessions().filter((s) => s.scaleSetId === fx!.scaleSetId)).toHaveLength(1);
    expect(second.ownerName).toBe(first.ownerName);
    expect(
      metricValue((await scrape(listener)).body, 'aro_listener_failures_total{kind="queue-token-expired"}'),
    ).toBeGreaterThanOrEqual(1);
  });

  it('rides out 5xx and dropped connections during the long poll, and a failed acquire', async () => {
    fx = await listenerFixture(sim);
    const listener = await fx.start();
    await waitFor(() => sessionOf(fx!), { description: 'a session' });
    sim.injectFault({ route: 'GET runnerscalesets/{id}/messages', status: 503, times: 4 });
    sim.injectFault({ route: 'GET runnerscalesets/{id}/messages', drop: true, times: 3 });
    sim.injectFault({ route: 'POST runnerscalesets/{id}/acquirejobs', status: 500, times: 1 });
    const jobs = [1, 2, 3, 4, 5].map(() => sim.enqueueJob({ scaleSetId: fx!.scaleSetId }));
    await waitFor(() => jobs.every((j) => acquired(j.jobId)), {
      description: 'every job offered during the faults acquired',
      timeoutMs: 60_000,
    });
    await fx.waitForSpec((s) => s.replicas === 5, 'replicas for the five jobs');
    // Every injected poll fault met a poll, and the listener is still polling and acquiring after them.
    await waitFor(() => sim.faults().length === 0, { description: 'every injected fault consumed' });
    const late = sim.enqueueJob({ scaleSetId: fx.scaleSetId });
    await waitFor(() => acquired(late.jobId), { description: 'a job offered after the faults acquired' });
    const m = (await scrape(listener)).body;
    // The acquire that got a 500 is not repeated by the client (it may have acted); the listener tried again.
    expect(metricValue(m, 'aro_listener_jobs_not_acquired_total{reason="failed"}')).toBeGreaterThanOrEqual(1);
    expect(metricValue(m, 'aro_listener_failures_total{kind="transient"}')).toBeGreaterThanOrEqual(1);
    expect(metricValue(m, 'aro_listener_jobs_acquired_total')).toBe(6);
    expect(sessionOf(fx)).toBeDefined();
  });

  it('backs off on 429 honouring Retry-After, and logs it with the scale set name', async () => {
    fx = await listenerFixture(sim);
    const logs: string[] = [];
    const listener = await fx.start({}, 'rate-limited-listener', logs);
    await waitFor(() => sessionOf(fx!), { description: 'a session' });
    // Every attempt of one poll (the client's own retries wait the asked second each) gets 429; then
    // the loop backs off, and the fourth 429 meets its next poll.
    sim.injectFault({
      route: 'GET runnerscalesets/{id}/messages',
      status: 429,
      retryAfterSeconds: 1,
      times: 4,
    });
    await waitFor(
      async () =>
        (metricValue((await scrape(listener)).body, 'aro_listener_failures_total{kind="rate-limited"}') ??
          0) >= 1,
      { description: 'a poll given up as rate limited', timeoutMs: 60_000 },
    );
    expect(
      logs.some((l) => l.includes('Rate limited') && l.includes(fx!.config.runner_scale_set_name!)),
    ).toBe(true);
    const job = sim.enqueueJob({ scaleSetId: fx.scaleSetId });
    await waitFor(() => acquired(job.jobId), {
      description: 'a job offered after the rate limit acquired',
      timeoutMs: 60_000,
    });
    expect(sim.faults()).toEqual([]);
  });

  it('backs off when the service refuses the credentials (403), logging the scale set, then recovers', async () => {
    fx = await listenerFixture(sim);
    sim.injectFault({ route: 'POST runnerscalesets/{id}/sessions', status: 403, times: 2 });
    const logs: string[] = [];
    const listener = await fx.start({}, 'refused-listener', logs);
    await waitFor(() => sessionOf(fx!), { description: 'a session after the refusals' });
    expect(
      metricValue((await scrape(listener)).body, 'aro_listener_session_creates_total{result="failed"}'),
    ).toBe(2);
    expect(
      logs.filter(
        (l) => l.includes('refused the credentials') && l.includes(fx!.config.runner_scale_set_name!),
      ),
    ).toHaveLength(2);
  });

  it('fails /healthz when the poll loop is stuck past its bound', async () => {
    fx = await listenerFixture(sim);
    const listener = await fx.start({ healthStallMs: 1_500, longPollTimeoutMs: 60_000 });
    await waitFor(() => sessionOf(fx!), { description: 'a session' });
    expect((await scrape(listener, '/healthz')).status).toBe(200);
    // Every poll now hangs for 30 s before the server even looks at it.
    sim.injectFault({ route: 'GET runnerscalesets/{id}/messages', latencyMs: 30_000 });
    const sick = await waitFor(
      async () => {
        const r = await scrape(listener, '/healthz');
        return r.status === 503 ? r : undefined;
      },
      { description: '/healthz to fail' },
    );
    expect(sick.body).toContain('has not completed a cycle');
  });
});
