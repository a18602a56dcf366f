import { startSimulator, type RunningSimulator } from './index';
import {
  acquire,
  apiUrl,
  call,
  connectAdmin,
  createScaleSet,
  createSession,
  deleteMessageUrl,
  generateJit,
  getMessage,
  obj,
  type AdminConnection,
  type OpenSession,
} from './spec-helpers';

const ZERO = '0001-01-01T00:00:00Z';
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

describe('simulator message sessions, long poll and job lifecycle', () => {
  let sim: RunningSimulator;
  let conn: AdminConnection;
  let ssId: number;

  beforeEach(async () => {
    // A short poll keeps "nothing arrived" cases quick; tests that need a held poll raise it.
    sim = await startSimulator({ seed: { timing: { longPollTimeoutMs: 150 } } });
    conn = await connectAdmin(sim);
    ssId = (await createScaleSet(conn, 'arc-set')).id as number;
  });

  afterEach(() => sim.stop());

  /** Polls once, acknowledges through the answered message, and returns its job messages. */
  async function next(session: OpenSession, last: { id: number }, maxCapacity?: number) {
    const r = await getMessage(session, last.id, maxCapacity);
    if (!r.message) throw new Error(`expected a message, got ${r.status} ${r.text}`);
    last.id = r.message.messageId;
    return r.message;
  }

  describe('sessions', () => {
    it('creates a session with a UUID, a queue URL under the simulator, a token, the scale set and statistics', async () => {
      const r = await call('POST', apiUrl(conn, `runtime/runnerscalesets/${ssId}/sessions`), {
        auth: conn.auth,
        body: { sessionId: '00000000-0000-0000-0000-000000000000', ownerName: 'arc-set-listener' },
      });
      expect(r.status).toBe(200);
      const s = obj(r);
      expect(s.sessionId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      expect(s.sessionId).not.toBe('00000000-0000-0000-0000-000000000000');
      expect(s.ownerName).toBe('arc-set-listener');
      expect(String(s.messageQueueUrl).startsWith(`${sim.url}/`)).toBe(true);
      expect(s.messageQueueAccessToken).toEqual(expect.any(String));
      expect(s.runnerScaleSet).toMatchObject({ id: ssId, name: 'arc-set' });
      expect(s.statistics).toEqual({
        totalAvailableJobs: 0,
        totalAcquiredJobs: 0,
        totalAssignedJobs: 0,
        totalRunningJobs: 0,
        totalRegisteredRunners: 0,
        totalBusyRunners: 0,
        totalIdleRunners: 0,
      });
    });

    it('answers 409 TaskAgentSessionConflictException to a second live session', async () => {
      await createSession(conn, ssId, 'first');
      const r = await call('POST', apiUrl(conn, `runtime/runnerscalesets/${ssId}/sessions`), {
        auth: conn.auth,
        body: { ownerName: 'second' },
      });
      expect(r.status).toBe(409);
      expect(obj(r).typeName).toContain('TaskAgentSessionConflictException');
      expect(sim.sessions().map((s) => s.ownerName)).toEqual(['first']);
    });

    it('lets a new session take over one idle past the session idle timeout; the old token then gets 401', async () => {
      const old = await createSession(conn, ssId, 'crashed-listener');
      sim.advanceClock(sim.timing().sessionIdleTimeoutMs + 1);
      const fresh = await createSession(conn, ssId, 'restarted-listener');
      expect(fresh.sessionId).not.toBe(old.sessionId);
      expect((await getMessage(old)).status).toBe(401);
      expect(sim.sessions().map((s) => s.ownerName)).toEqual(['restarted-listener']);
    });

    it('rotates the queue token on refresh: the old token gets 401, the new one works', async () => {
      const s = await createSession(conn, ssId);
      const r = await call('PATCH', apiUrl(conn, `runtime/runnerscalesets/${ssId}/sessions/${s.sessionId}`), {
        auth: conn.auth,
      });
      expect(r.status).toBe(200);
      const refreshed = obj(r);
      expect(refreshed.sessionId).toBe(s.sessionId);
      expect(refreshed.messageQueueUrl).toBe(s.queueUrl);
      expect(refreshed.statistics).toEqual(expect.any(Object));
      expect(refreshed.messageQueueAccessToken).not.toBe(s.queueToken);
      expect((await getMessage(s)).status).toBe(401);
      expect(
        (await getMessage({ ...s, queueToken: refreshed.messageQueueAccessToken as string })).status,
      ).toBe(202);
    });

    it('answers 400 TaskAgentSessionExpiredException to refresh/delete of an unknown session', async () => {
      const url = apiUrl(
        conn,
        `runtime/runnerscalesets/${ssId}/sessions/6b1d6c3e-0000-4000-8000-000000000000`,
      );
      for (const method of ['PATCH', 'DELETE']) {
        const r = await call(method, url, { auth: conn.auth });
        expect(r.status).toBe(400);
        expect(obj(r).typeName).toContain('TaskAgentSessionExpiredException');
      }
    });

    it('deletes with 204, stops delivery (401 on the queue) and allows a new session', async () => {
      const s = await createSession(conn, ssId);
      const r = await call(
        'DELETE',
        apiUrl(conn, `runtime/runnerscalesets/${ssId}/sessions/${s.sessionId}`),
        { auth: conn.auth },
      );
      expect(r.status).toBe(204);
      expect((await getMessage(s)).status).toBe(401);
      await expect(createSession(conn, ssId)).resolves.toMatchObject({ sessionId: expect.any(String) });
    });

    it('answers 401 on the queue once the queue token outlived its lifetime, until refreshed', async () => {
      const s = await createSession(conn, ssId);
      sim.advanceClock(sim.tokenLifetimes().queueTokenSeconds * 1000 + 1);
      const conn2 = await connectAdmin(sim);
      expect((await getMessage(s)).status).toBe(401);
      const r = obj(
        await call('PATCH', apiUrl(conn2, `runtime/runnerscalesets/${ssId}/sessions/${s.sessionId}`), {
          auth: conn2.auth,
        }),
      );
      expect((await getMessage({ ...s, queueToken: r.messageQueueAccessToken as string })).status).toBe(202);
    });

    it('answers 401 on the queue after expireQueueTokens()', async () => {
      const s = await createSession(conn, ssId);
      sim.expireQueueTokens();
      expect((await getMessage(s)).status).toBe(401);
      expect((await call('DELETE', deleteMessageUrl(s, 1), { auth: `Bearer ${s.queueToken}` })).status).toBe(
        401,
      );
      expect((await acquire(conn, s, ssId, [1])).status).toBe(401);
    });

    it('refuses the admin token on the queue and a queue token on admin routes', async () => {
      const s = await createSession(conn, ssId);
      expect((await call('GET', s.queueUrl, { auth: conn.auth })).status).toBe(401);
      expect(
        (await call('GET', apiUrl(conn, 'runtime/runnergroups/'), { auth: `Bearer ${s.queueToken}` })).status,
      ).toBe(401);
    });
  });

  describe('long poll', () => {
    it('answers 202 with an empty body when nothing arrives within the poll timeout', async () => {
      const s = await createSession(conn, ssId);
      const r = await getMessage(s);
      expect(r.status).toBe(202);
      expect(r.text).toBe('');
      expect(r.headers.get('content-length')).toBe('0');
    });

    it('holds the poll and answers it as soon as a job is queued', async () => {
      sim.setTiming({ longPollTimeoutMs: 60_000 });
      const s = await createSession(conn, ssId);
      const poll = getMessage(s);
      while (sim.callCount('GET runnerscalesets/{id}/messages') === 0)
        await new Promise((r) => setImmediate(r));
      const job = sim.enqueueJob({ labels: ['arc-set'], repo: 'octo/hello' });
      const r = await poll;
      expect(r.status).toBe(200);
      expect(r.message?.items).toEqual([
        expect.objectContaining({ messageType: 'JobAvailable', jobId: job.jobId }),
      ]);
    });

    it('ends a held poll with 202 when the session is deleted', async () => {
      sim.setTiming({ longPollTimeoutMs: 60_000 });
      const s = await createSession(conn, ssId);
      const poll = getMessage(s);
      while (sim.callCount('GET runnerscalesets/{id}/messages') === 0)
        await new Promise((r) => setImmediate(r));
      await call('DELETE', apiUrl(conn, `runtime/runnerscalesets/${ssId}/sessions/${s.sessionId}`), {
        auth: conn.auth,
      });
      expect((await poll).status).toBe(202);
    });

    it('redelivers an unacknowledged message and drops it once lastMessageId covers it', async () => {
      const s = await createSession(conn, ssId);
      sim.enqueueJob({ scaleSetId: ssId });
      const first = await getMessage(s);
      const again = await getMessage(s);
      expect(again.message?.messageId).toBe(first.message?.messageId);
      expect(again.message?.items).toEqual(first.message?.items);
      expect((await getMessage(s, first.message?.messageId)).status).toBe(202);
      expect(sim.sessions()[0].acknowledgedMessageId).toBe(first.message?.messageId);
    });

    it('acknowledges by DELETE of the message (204)', async () => {
      const s = await createSession(conn, ssId);
      sim.enqueueJob({ scaleSetId: ssId });
      const m = await getMessage(s);
      const del = await call('DELETE', deleteMessageUrl(s, m.message?.messageId as number), {
        auth: `Bearer ${s.queueToken}`,
      });
      expect(del.status).toBe(204);
      expect((await getMessage(s)).status).toBe(202);
    });

    it('batches job messages, at most 50 per message, with increasing message ids', async () => {
      const s = await createSession(conn, ssId);
      for (let i = 0; i < 60; i++) sim.enqueueJob({ scaleSetId: ssId });
      const last = { id: 0 };
      const m1 = await next(s, last);
      const m2 = await next(s, last);
      expect(m1.items).toHaveLength(50);
      expect(m2.items).toHaveLength(10);
      expect(m2.messageId).toBeGreaterThan(m1.messageId);
      expect(m2.statistics.totalAvailableJobs).toBe(60);
    });
  });

  describe('job lifecycle', () => {
    it('walks JobAvailable -> JobAssigned -> JobStarted -> JobCompleted with statistics on every message', async () => {
      const s = await createSession(conn, ssId);
      const last = { id: 0 };
      const job = sim.enqueueJob({
        labels: ['arc-set'],
        repo: 'octo/hello',
        workflowRef: 'octo/hello/.github/workflows/ci.yml@refs/heads/main',
      });

      const available = await next(s, last);
      expect(available.items).toEqual([
        expect.objectContaining({
          messageType: 'JobAvailable',
          runnerRequestId: job.runnerRequestId,
          jobId: job.jobId,
          repositoryName: 'hello',
          ownerName: 'octo',
          jobWorkflowRef: 'octo/hello/.github/workflows/ci.yml@refs/heads/main',
          requestLabels: ['arc-set'],
          runnerAssignTime: ZERO,
          finishTime: ZERO,
          acquireJobUrl: expect.stringContaining(`/runnerscalesets/${ssId}/`),
        }),
      ]);
      expect(available.items[0].queueTime).toMatch(RFC3339);
      expect(available.statistics).toMatchObject({ totalAvailableJobs: 1, totalAssignedJobs: 0 });

      const acquired = await acquire(conn, s, ssId, [job.runnerRequestId, 999999]);
      expect(acquired.status).toBe(200);
      expect(obj(acquired)).toEqual({ count: 1, value: [job.runnerRequestId] });
      const assigned = await next(s, last);
      expect(assigned.items).toEqual([
        expect.objectContaining({ messageType: 'JobAssigned', jobId: job.jobId }),
      ]);
      expect(assigned.items[0].scaleSetAssignTime).not.toBe(ZERO);
      expect(assigned.statistics).toMatchObject({
        totalAvailableJobs: 0,
        totalAcquiredJobs: 1,
        totalAssignedJobs: 1,
        totalRunningJobs: 0,
      });

      const { runner } = (await generateJit(conn, ssId, 'arc-set-runner-1')) as { runner: { id: number } };
      sim.runnerConnected('arc-set-runner-1');
      const started = await next(s, last);
      expect(started.items).toEqual([
        expect.objectContaining({
          messageType: 'JobStarted',
          jobId: job.jobId,
          runnerId: runner.id,
          runnerName: 'arc-set-runner-1',
        }),
      ]);
      expect(started.items[0].runnerAssignTime).toMatch(RFC3339);
      expect(started.items[0].runnerAssignTime).not.toBe(ZERO);
      expect(started.statistics).toMatchObject({
        totalAssignedJobs: 1,
        totalRunningJobs: 1,
        totalRegisteredRunners: 1,
        totalBusyRunners: 1,
        totalIdleRunners: 0,
      });

      sim.completeJob(job.jobId, 'succeeded');
      const completed = await next(s, last);
      expect(completed.items).toEqual([
        expect.objectContaining({
          messageType: 'JobCompleted',
          result: 'succeeded',
          runnerId: runner.id,
          runnerName: 'arc-set-runner-1',
        }),
      ]);
      expect(completed.items[0].finishTime).not.toBe(ZERO);
      expect(completed.statistics).toMatchObject({
        totalAssignedJobs: 0,
        totalRunningJobs: 0,
        totalIdleRunners: 1,
      });

      sim.runnerExited('arc-set-runner-1', 0);
      expect(sim.runner('arc-set-runner-1')).toBeUndefined();
      const gone = await call('GET', apiUrl(conn, `distributedtask/pools/0/agents/${runner.id}`), {
        auth: conn.auth,
      });
      expect(gone.status).toBe(404);
      expect(sim.job(job.jobId)).toMatchObject({ state: 'completed', result: 'succeeded' });
    });

    it('keeps an offline registration after a non-zero exit and fails the job it ran', async () => {
      await createSession(conn, ssId);
      await generateJit(conn, ssId, 'crashy');
      const job = sim.startJob('crashy');
      sim.runnerExited('crashy', 1);
      expect(sim.runner('crashy')).toMatchObject({ status: 'offline', jobId: null });
      expect(sim.job(job.jobId)).toMatchObject({ state: 'completed', result: 'failed' });
    });

    it('does not acquire beyond X-ScaleSetMaxCapacity, and re-offers the left job when a slot frees', async () => {
      const s = await createSession(conn, ssId);
      const last = { id: 0 };
      const a = sim.enqueueJob({ scaleSetId: ssId });
      const b = sim.enqueueJob({ scaleSetId: ssId });
      await next(s, last, 1);
      expect(sim.sessions()[0].maxCapacity).toBe(1);
      expect(obj(await acquire(conn, s, ssId, [a.runnerRequestId, b.runnerRequestId]))).toEqual({
        count: 1,
        value: [a.runnerRequestId],
      });
      expect(sim.job(b.jobId)?.state).toBe('available');

      await generateJit(conn, ssId, 'only-runner');
      sim.runnerConnected('only-runner');
      sim.completeJob(a.jobId, 'succeeded');
      const items = [...(await next(s, last, 1)).items];
      expect(items.map((i) => i.messageType)).toEqual([
        'JobAssigned',
        'JobStarted',
        'JobCompleted',
        'JobAvailable',
      ]);
      expect(items[3].runnerRequestId).toBe(b.runnerRequestId);
      expect(obj(await acquire(conn, s, ssId, [b.runnerRequestId]))).toEqual({
        count: 1,
        value: [b.runnerRequestId],
      });
    });

    it('re-offers jobs to a new session and reports assigned jobs in the session statistics', async () => {
      const s = await createSession(conn, ssId);
      const a = sim.enqueueJob({ scaleSetId: ssId });
      const b = sim.enqueueJob({ scaleSetId: ssId });
      expect(obj(await acquire(conn, s, ssId, [a.runnerRequestId])).count).toBe(1);
      await call('DELETE', apiUrl(conn, `runtime/runnerscalesets/${ssId}/sessions/${s.sessionId}`), {
        auth: conn.auth,
      });

      const s2 = await createSession(conn, ssId);
      expect(s2.statistics).toMatchObject({ totalAssignedJobs: 1, totalAvailableJobs: 1 });
      const m = await getMessage(s2);
      expect(m.message?.items).toEqual([
        expect.objectContaining({ messageType: 'JobAvailable', jobId: b.jobId }),
      ]);
    });

    it('queues a job until a scale set with matching labels has a listener', async () => {
      const job = sim.enqueueJob({ labels: ['gpu'], repo: 'octo/hello' });
      expect(sim.job(job.jobId)?.state).toBe('queued');
      const gpu = (await createScaleSet(conn, 'gpu-set', { labels: [{ name: 'gpu' }] })).id as number;
      expect(sim.job(job.jobId)?.state).toBe('queued');
      const s = await createSession(conn, gpu);
      expect(sim.job(job.jobId)).toMatchObject({ state: 'available', scaleSetId: gpu });
      expect((await getMessage(s)).message?.items[0]).toMatchObject({
        messageType: 'JobAvailable',
        requestLabels: ['gpu'],
      });
    });

    it('offers an org job to an enterprise scale set when no narrower one matches', async () => {
      const entConn = await connectAdmin(sim, { enterprise: 'ent' });
      const entSet = (await createScaleSet(entConn, 'ent-set')).id as number;
      await createSession(entConn, entSet);
      const job = sim.enqueueJob({ labels: ['ent-set'], repo: 'octo/hello' });
      expect(sim.job(job.jobId)).toMatchObject({ state: 'available', scaleSetId: entSet });
    });

    it('re-offers a job not acquired within jobReofferMs', async () => {
      sim.setTiming({ jobReofferMs: 1000 });
      const s = await createSession(conn, ssId);
      const last = { id: 0 };
      const job = sim.enqueueJob({ scaleSetId: ssId });
      await next(s, last);
      sim.advanceClock(1000);
      expect((await next(s, last)).items).toEqual([
        expect.objectContaining({ messageType: 'JobAvailable', jobId: job.jobId }),
      ]);
    });

    it('cancels an acquired job no runner started in time, re-queues it, and gives up after maxJobStartAttempts', async () => {
      sim.setTiming({ jobStartTimeoutMs: 1000, maxJobStartAttempts: 2 });
      const s = await createSession(conn, ssId);
      const last = { id: 0 };
      const job = sim.enqueueJob({ scaleSetId: ssId });
      await next(s, last);
      await acquire(conn, s, ssId, [job.runnerRequestId]);
      sim.advanceClock(1000);
      const first = await next(s, last);
      expect(first.items.map((i) => [i.messageType, i.result])).toEqual([
        ['JobAssigned', undefined],
        ['JobCompleted', 'canceled'],
        ['JobAvailable', undefined],
      ]);
      expect(sim.job(job.jobId)).toMatchObject({ state: 'available', startAttempts: 1 });

      await acquire(conn, s, ssId, [job.runnerRequestId]);
      sim.advanceClock(1000);
      const second = await next(s, last);
      expect(second.items.map((i) => [i.messageType, i.result])).toEqual([
        ['JobAssigned', undefined],
        ['JobCompleted', 'canceled'],
      ]);
      expect(sim.job(job.jobId)).toMatchObject({ state: 'completed', result: 'canceled', startAttempts: 2 });
    });

    it('completes a job with durationMs by itself once started', async () => {
      await generateJit(conn, ssId, 'timed');
      const job = sim.startJob('timed', { durationMs: 1 });
      while (sim.job(job.jobId)?.state !== 'completed') await new Promise((r) => setTimeout(r, 5));
      expect(sim.job(job.jobId)?.result).toBe('succeeded');
      expect(sim.runner('timed')?.status).toBe('idle');
    });

    it('lists acquirable jobs (204 when none)', async () => {
      const url = apiUrl(conn, `runtime/runnerscalesets/${ssId}/acquirablejobs`);
      expect((await call('GET', url, { auth: conn.auth })).status).toBe(204);
      await createSession(conn, ssId);
      const job = sim.enqueueJob({ scaleSetId: ssId });
      const r = await call('GET', url, { auth: conn.auth });
      expect(obj(r)).toMatchObject({
        count: 1,
        value: [{ messageType: 'JobAvailable', runnerRequestId: job.runnerRequestId }],
      });
    });

    it('rejects a non-array acquirejobs body with 400', async () => {
      const s = await createSession(conn, ssId);
      const r = await call('POST', apiUrl(conn, `runtime/runnerscalesets/${ssId}/acquirejobs`), {
        auth: `Bearer ${s.queueToken}`,
        body: { ids: [1] },
      });
      expect(r.status).toBe(400);
    });

    it('returns an assigned-but-unstarted job to the scale set when its runner exits', async () => {
      await createSession(conn, ssId);
      await generateJit(conn, ssId, 'r1');
      const job = sim.assignJobToRunner('r1');
      sim.runnerExited('r1', 0);
      expect(sim.job(job.jobId)).toMatchObject({ state: 'acquired', runnerId: null });
      await generateJit(conn, ssId, 'r2');
      sim.runnerConnected('r2');
      expect(sim.job(job.jobId)).toMatchObject({ state: 'running', runnerName: 'r2' });
    });
  });
});
