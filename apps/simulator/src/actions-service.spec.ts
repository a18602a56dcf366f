import { decodeJitConfig, startSimulator, type RunningSimulator } from './index';
import {
  acquire,
  apiUrl,
  call,
  connectAdmin,
  createScaleSet,
  createSession,
  generateJit,
  obj,
  type AdminConnection,
} from './spec-helpers';

describe('simulator Actions service (/tenant/{id}/_apis, admin token)', () => {
  let sim: RunningSimulator;
  let conn: AdminConnection;

  beforeEach(async () => {
    sim = await startSimulator();
    conn = await connectAdmin(sim);
  });

  afterEach(() => sim.stop());

  describe('runner groups', () => {
    it('always has group 1 "Default" and finds created groups by name', async () => {
      const id = sim.createRunnerGroup({ org: 'octo' }, 'gpu');
      const def = await call('GET', apiUrl(conn, 'runtime/runnergroups/', { groupName: 'Default' }), {
        auth: conn.auth,
      });
      expect(def.status).toBe(200);
      expect(obj(def)).toEqual({
        count: 1,
        value: [{ id: 1, name: 'Default', size: 0, isDefaultGroup: true }],
      });
      const gpu = obj(
        await call('GET', apiUrl(conn, 'runtime/runnergroups/', { groupName: 'gpu' }), { auth: conn.auth }),
      );
      expect(gpu).toEqual({ count: 1, value: [{ id, name: 'gpu', size: 0, isDefaultGroup: false }] });
      const none = obj(
        await call('GET', apiUrl(conn, 'runtime/runnergroups/', { groupName: 'nope' }), { auth: conn.auth }),
      );
      expect(none).toEqual({ count: 0, value: [] });
    });
  });

  describe('scale sets', () => {
    it('creates with server-assigned fields, default System label, and finds by group+name and by id', async () => {
      const created = await createScaleSet(conn, 'arc-set', {
        labels: [{ name: 'linux' }, { name: 'arc-set', type: 'System' }],
      });
      expect(created).toMatchObject({
        name: 'arc-set',
        runnerGroupId: 1,
        runnerGroupName: 'Default',
        labels: [
          { type: 'System', name: 'linux' },
          { type: 'System', name: 'arc-set' },
        ],
        RunnerSetting: {},
        statistics: { totalAssignedJobs: 0, totalRegisteredRunners: 0 },
      });
      expect(created.id).toEqual(expect.any(Number));
      expect(created.createdOn).not.toBe('0001-01-01T00:00:00Z');
      expect(created.runnerJitConfigUrl).toBe(
        `${conn.base}_apis/runtime/runnerscalesets/${created.id}/generatejitconfig`,
      );

      const byName = obj(
        await call('GET', apiUrl(conn, 'runtime/runnerscalesets', { runnerGroupId: 1, name: 'arc-set' }), {
          auth: conn.auth,
        }),
      );
      expect(byName.count).toBe(1);
      expect((byName.value as unknown[])[0]).toMatchObject({ id: created.id });
      const missing = obj(
        await call('GET', apiUrl(conn, 'runtime/runnerscalesets', { runnerGroupId: 1, name: 'x' }), {
          auth: conn.auth,
        }),
      );
      expect(missing).toEqual({ count: 0, value: [] });

      const byId = await call('GET', apiUrl(conn, `runtime/runnerscalesets/${created.id}`), {
        auth: conn.auth,
      });
      expect(byId.status).toBe(200);
      expect(obj(byId).name).toBe('arc-set');
    });

    it('defaults labels to the scale set name', async () => {
      expect((await createScaleSet(conn, 'plain')).labels).toEqual([{ type: 'System', name: 'plain' }]);
    });

    it('answers 409 to a duplicate name in the same group, and allows it in another group', async () => {
      await createScaleSet(conn, 'dup');
      const again = await call('POST', apiUrl(conn, 'runtime/runnerscalesets'), {
        auth: conn.auth,
        body: { name: 'dup', runnerGroupId: 1 },
      });
      expect(again.status).toBe(409);
      expect(obj(again)).toMatchObject({ $id: '1', innerException: null, errorCode: 0, eventId: 3000 });
      expect(obj(again).typeName).toContain('Exists');
      const other = sim.createRunnerGroup({ org: 'octo' }, 'other');
      expect((await createScaleSet(conn, 'dup', { runnerGroupId: other })).runnerGroupName).toBe('other');
    });

    it('answers 404 with a VSS body for an unknown id', async () => {
      const r = await call('GET', apiUrl(conn, 'runtime/runnerscalesets/999'), { auth: conn.auth });
      expect(r.status).toBe(404);
      expect(obj(r).typeName).toEqual(expect.stringContaining('NotFoundException'));
      expect(r.headers.get('activityid')).toMatch(/^[0-9a-f-]{36}$/);
    });

    it('merges a partial update and leaves absent and zero fields alone', async () => {
      const ss = await createScaleSet(conn, 'patch-me', { RunnerSetting: { disableUpdate: true } });
      const group = sim.createRunnerGroup({ org: 'octo' }, 'moved');
      const r = await call('PATCH', apiUrl(conn, `runtime/runnerscalesets/${ss.id}`), {
        auth: conn.auth,
        body: { runnerGroupId: group, RunnerSetting: {}, createdOn: '0001-01-01T00:00:00Z' },
      });
      expect(r.status).toBe(200);
      expect(obj(r)).toMatchObject({
        name: 'patch-me',
        runnerGroupId: group,
        runnerGroupName: 'moved',
        RunnerSetting: { disableUpdate: true },
      });
      expect(obj(r).createdOn).toBe(ss.createdOn);
      const renamed = obj(
        await call('PATCH', apiUrl(conn, `runtime/runnerscalesets/${ss.id}`), {
          auth: conn.auth,
          body: { name: 'renamed', RunnerSetting: {} },
        }),
      );
      expect(renamed).toMatchObject({ name: 'renamed', runnerGroupId: group });
    });

    it('deletes with 204 and drops the scale set runners and sessions', async () => {
      const ss = await createScaleSet(conn, 'doomed');
      await generateJit(conn, ss.id as number, 'doomed-runner-1');
      await createSession(conn, ss.id as number);
      const r = await call('DELETE', apiUrl(conn, `runtime/runnerscalesets/${ss.id}`), { auth: conn.auth });
      expect(r.status).toBe(204);
      expect(r.text).toBe('');
      expect(sim.scaleSets()).toEqual([]);
      expect(sim.registrations()).toEqual([]);
      expect(sim.sessions()).toEqual([]);
      expect(
        (await call('GET', apiUrl(conn, `runtime/runnerscalesets/${ss.id}`), { auth: conn.auth })).status,
      ).toBe(404);
    });
  });

  describe('runners', () => {
    let ssId: number;
    beforeEach(async () => {
      ssId = (await createScaleSet(conn, 'runners')).id as number;
    });

    it('registers an offline runner per JIT config whose payload names it and the simulator', async () => {
      const jit = await generateJit(conn, ssId, 'runners-abc-runner-1');
      const runner = jit.runner as Record<string, unknown>;
      expect(runner).toMatchObject({
        id: expect.any(Number),
        name: 'runners-abc-runner-1',
        runnerScaleSetId: ssId,
      });
      expect(decodeJitConfig(jit.encodedJITConfig as string)).toMatchObject({
        runnerId: runner.id,
        runnerName: 'runners-abc-runner-1',
        runnerScaleSetId: ssId,
        simulatorUrl: sim.url,
        workFolder: '_work',
      });
      expect(sim.runner('runners-abc-runner-1')).toMatchObject({
        id: runner.id,
        scaleSetId: ssId,
        status: 'offline',
        jobId: null,
      });
    });

    it('answers 409 TaskAgentExistsException for a name taken in any scale set of the tenant', async () => {
      const other = (await createScaleSet(conn, 'other')).id as number;
      await generateJit(conn, ssId, 'taken');
      const r = await call('POST', apiUrl(conn, `runtime/runnerscalesets/${other}/generatejitconfig`), {
        auth: conn.auth,
        body: { name: 'taken', workFolder: '' },
      });
      expect(r.status).toBe(409);
      expect(obj(r).typeName).toBe(
        'GitHub.DistributedTask.WebApi.TaskAgentExistsException, GitHub.DistributedTask.WebApi',
      );
      expect(obj(r).typeKey).toBe('TaskAgentExistsException');
    });

    it('gets a runner by id (404 TaskAgentNotFoundException when unknown) and by name (count 0/1)', async () => {
      const { runner } = (await generateJit(conn, ssId, 'find-me')) as { runner: { id: number } };
      const byId = await call('GET', apiUrl(conn, `distributedtask/pools/0/agents/${runner.id}`), {
        auth: conn.auth,
      });
      expect(obj(byId)).toMatchObject({ id: runner.id, name: 'find-me', runnerScaleSetId: ssId });
      const missing = await call('GET', apiUrl(conn, 'distributedtask/pools/0/agents/424242'), {
        auth: conn.auth,
      });
      expect(missing.status).toBe(404);
      expect(obj(missing).typeName).toContain('TaskAgentNotFoundException');
      const byName = obj(
        await call('GET', apiUrl(conn, 'distributedtask/pools/0/agents', { agentName: 'find-me' }), {
          auth: conn.auth,
        }),
      );
      expect(byName).toMatchObject({ count: 1, value: [{ id: runner.id, runnerScaleSetId: ssId }] });
      const none = obj(
        await call('GET', apiUrl(conn, 'distributedtask/pools/0/agents', { agentName: 'ghost' }), {
          auth: conn.auth,
        }),
      );
      expect(none).toEqual({ count: 0, value: [] });
    });

    it('lists every runner of the tenant with its scale set when no agentName is given', async () => {
      const other = (await createScaleSet(conn, 'other')).id as number;
      await generateJit(conn, ssId, 'r-1');
      await generateJit(conn, other, 'r-2');
      const all = obj(await call('GET', apiUrl(conn, 'distributedtask/pools/0/agents'), { auth: conn.auth }));
      expect(all.count).toBe(2);
      expect(all.value).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ name: 'r-1', runnerScaleSetId: ssId }),
          expect.objectContaining({ name: 'r-2', runnerScaleSetId: other }),
        ]),
      );
    });

    it('removes an idle runner (204), refuses one holding a job (400 JobStillRunning), 204 again once removed, 404 for never issued', async () => {
      const { runner: idle } = (await generateJit(conn, ssId, 'idle')) as { runner: { id: number } };
      const { runner: busy } = (await generateJit(conn, ssId, 'busy')) as { runner: { id: number } };
      sim.assignJobToRunner('busy');

      expect(
        (await call('DELETE', apiUrl(conn, `distributedtask/pools/0/agents/${idle.id}`), { auth: conn.auth }))
          .status,
      ).toBe(204);
      expect(sim.runner('idle')).toBeUndefined();

      const refused = await call('DELETE', apiUrl(conn, `distributedtask/pools/0/agents/${busy.id}`), {
        auth: conn.auth,
      });
      expect(refused.status).toBe(400);
      expect(obj(refused).typeName).toContain('TaskAgentJobStillRunningException');
      expect(sim.runner('busy')?.status).toBe('busy');

      // Upstream's RemoveRunner accepts only 204; the real service lets a finalizer finish a runner that is gone.
      const again = await call('DELETE', apiUrl(conn, `distributedtask/pools/0/agents/${idle.id}`), {
        auth: conn.auth,
      });
      expect(again.status).toBe(204);
      expect(
        (await call('GET', apiUrl(conn, `distributedtask/pools/0/agents/${idle.id}`), { auth: conn.auth }))
          .status,
      ).toBe(404);

      const never = await call('DELETE', apiUrl(conn, 'distributedtask/pools/0/agents/424242'), {
        auth: conn.auth,
      });
      expect(never.status).toBe(404);
      expect(obj(never).typeName).toContain('TaskAgentNotFoundException');
    });

    it('answers 204 to the DELETE of a runner that deregistered itself on exit 0, only in its own tenant', async () => {
      const { runner } = (await generateJit(conn, ssId, 'finished')) as { runner: { id: number } };
      sim.runnerConnected('finished');
      const job = sim.startJob('finished');
      sim.completeJob(job.jobId, 'succeeded');
      sim.runnerExited('finished', 0);
      expect(sim.runner('finished')).toBeUndefined();
      const url = apiUrl(conn, `distributedtask/pools/0/agents/${runner.id}`);
      expect((await call('DELETE', url, { auth: conn.auth })).status).toBe(204);
      expect(sim.runner('finished')).toBeUndefined();

      const repoConn = await connectAdmin(sim, { org: 'octo', repo: 'hello' });
      const elsewhere = await call(
        'DELETE',
        apiUrl(repoConn, `distributedtask/pools/0/agents/${runner.id}`),
        {
          auth: repoConn.auth,
        },
      );
      expect(elsewhere.status).toBe(404);
    });

    it('gives an ephemeral (JIT) runner one job only, even while it stays online after that job', async () => {
      await generateJit(conn, ssId, 'once');
      await generateJit(conn, ssId, 'fresh');
      const session = await createSession(conn, ssId);
      sim.runnerConnected('once');
      const first = sim.enqueueJob({ scaleSetId: ssId });
      expect((await acquire(conn, session, ssId, [first.runnerRequestId])).status).toBe(200);
      expect(sim.job(first.jobId)).toMatchObject({ state: 'running', runnerName: 'once' });
      sim.completeJob(first.jobId, 'succeeded');

      // 'once' is still online (it has not exited yet): the next acquired job must wait for another runner.
      const second = sim.enqueueJob({ scaleSetId: ssId });
      expect((await acquire(conn, session, ssId, [second.runnerRequestId])).status).toBe(200);
      expect(sim.job(second.jobId)).toMatchObject({ state: 'acquired', runnerName: null });
      expect(() => sim.startJob('once')).toThrow('runner "once" is ephemeral and already ran job');
      sim.runnerConnected('fresh');
      expect(sim.job(second.jobId)).toMatchObject({ state: 'running', runnerName: 'fresh' });
    });

    it('refuses removal while a started job runs, and allows it after the job completed', async () => {
      const { runner } = (await generateJit(conn, ssId, 'worker')) as { runner: { id: number } };
      sim.runnerConnected('worker');
      const job = sim.startJob('worker');
      expect(job.state).toBe('running');
      const url = apiUrl(conn, `distributedtask/pools/0/agents/${runner.id}`);
      expect((await call('DELETE', url, { auth: conn.auth })).status).toBe(400);
      sim.completeJob(job.jobId, 'succeeded');
      expect((await call('DELETE', url, { auth: conn.auth })).status).toBe(204);
    });
  });

  describe('admin token', () => {
    it('answers 401 without a token, with an unknown one, and with another tenant’s', async () => {
      const url = apiUrl(conn, 'runtime/runnerscalesets', { runnerGroupId: 1, name: 'x' });
      expect((await call('GET', url)).status).toBe(401);
      expect((await call('GET', url, { auth: 'Bearer a.b.c' })).status).toBe(401);
      const repoConn = await connectAdmin(sim, { org: 'octo', repo: 'hello' });
      const r = await call('GET', url, { auth: repoConn.auth });
      expect(r.status).toBe(401);
      expect(obj(r).typeName).toContain('Unauthorized');
    });

    it('answers 401 once the admin token expired, and a fresh registration works again', async () => {
      const url = apiUrl(conn, 'runtime/runnergroups/', { groupName: 'Default' });
      sim.advanceClock(sim.tokenLifetimes().adminTokenSeconds * 1000 + 1000);
      expect((await call('GET', url, { auth: conn.auth })).status).toBe(401);
      const fresh = await connectAdmin(sim);
      expect(
        (
          await call('GET', apiUrl(fresh, 'runtime/runnergroups/', { groupName: 'Default' }), {
            auth: fresh.auth,
          })
        ).status,
      ).toBe(200);
    });

    it('answers 401 after expireAdminTokens()', async () => {
      sim.expireAdminTokens();
      expect((await call('GET', apiUrl(conn, 'runtime/runnergroups/'), { auth: conn.auth })).status).toBe(
        401,
      );
    });

    it('requires api-version=6.0-preview unless relaxed', async () => {
      const bare = `${conn.base}_apis/runtime/runnergroups/?groupName=Default`;
      const r = await call('GET', bare, { auth: conn.auth });
      expect(r.status).toBe(400);
      expect(obj(r).typeName).toContain('VssVersionNotSpecifiedException');
      sim.setTiming({ requireApiVersion: false });
      expect((await call('GET', bare, { auth: conn.auth })).status).toBe(200);
    });

    it('accepts duplicate and trailing slashes in paths', async () => {
      const url = `${conn.base}/_apis//runtime/runnergroups/?groupName=Default&api-version=6.0-preview`;
      expect((await call('GET', url, { auth: conn.auth })).status).toBe(200);
    });
  });
});
