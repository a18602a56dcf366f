import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSeedFile, startSimulator, type RunningSimulator } from './index';
import {
  acquire,
  apiUrl,
  appJwt,
  call,
  connectAdmin,
  createScaleSet,
  createSession,
  generateJit,
  obj,
  registrationToken,
} from './spec-helpers';

describe('simulator admin API over HTTP (/_sim)', () => {
  let sim: RunningSimulator;

  beforeEach(async () => {
    sim = await startSimulator();
  });

  afterEach(() => sim.stop());

  const admin = (method: string, path: string, body?: unknown) =>
    call(method, `${sim.url}/_sim/${path}`, { body });

  it('creates owners and PATs that the REST routes then honour', async () => {
    expect((await admin('POST', 'orgs', { name: 'acme' })).status).toBe(204);
    expect((await admin('POST', 'repos', { fullName: 'acme/app' })).status).toBe(204);
    expect((await admin('POST', 'pats', { token: 'ghp_acme', owners: [{ org: 'acme' }] })).status).toBe(204);
    await expect(registrationToken(sim, { org: 'acme', repo: 'app' }, 'ghp_acme')).resolves.toBeTruthy();
    const denied = await call('POST', `${sim.url}/api/v3/orgs/octo/actions/runners/registration-token`, {
      auth: 'Bearer ghp_acme',
    });
    expect(denied.status).toBe(403);
  });

  it('registers an app and an installation whose JWT then buys an installation token', async () => {
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const app = obj(
      await admin('POST', 'apps', {
        publicKeyPem: publicKey.export({ type: 'pkcs1', format: 'pem' }).toString(),
      }),
    );
    const inst = obj(
      await admin('POST', `apps/${app.appId}/installations`, { owner: { enterprise: 'ent' } }),
    );
    const r = await call('POST', `${sim.url}/api/v3/app/installations/${inst.installationId}/access_tokens`, {
      auth: `Bearer ${appJwt(privateKey, app.clientId as string)}`,
    });
    expect(r.status).toBe(201);
    await expect(registrationToken(sim, { enterprise: 'ent' }, obj(r).token as string)).resolves.toBeTruthy();
  });

  it('drives a runner through a job and reports it in /_sim/state', async () => {
    const conn = await connectAdmin(sim);
    const ss = (await createScaleSet(conn, 'via-http')).id as number;
    const session = await createSession(conn, ss);
    await generateJit(conn, ss, 'http-runner');
    expect(obj(await admin('POST', 'runners/http-runner/connect')).status).toBe('idle');
    const job = obj(await admin('POST', 'jobs', { scaleSetId: ss }));
    expect(job.state).toBe('available');
    await acquire(conn, session, ss, [job.runnerRequestId as number]);
    expect(obj(await admin('GET', `jobs/${job.jobId}`))).toMatchObject({
      state: 'running',
      runnerName: 'http-runner',
    });
    expect(obj(await admin('GET', 'runners/http-runner'))).toMatchObject({
      status: 'busy',
      jobId: job.jobId,
    });

    const byName = await call(
      'GET',
      apiUrl(conn, 'distributedtask/pools/0/agents', { agentName: 'http-runner' }),
      { auth: conn.auth },
    );
    expect(obj(byName)).toMatchObject({
      count: 1,
      value: [{ name: 'http-runner', runnerScaleSetId: ss, status: 'online' }],
    });

    expect(obj(await admin('POST', `jobs/${job.jobId}/complete`, { result: 'failed' }))).toMatchObject({
      result: 'failed',
    });
    expect((await admin('POST', 'runners/http-runner/exit', { exitCode: 0 })).status).toBe(204);
    const state = obj(await admin('GET', 'state'));
    expect(state.runners).toEqual([]);
    expect(state.jobs).toEqual([
      expect.objectContaining({ jobId: job.jobId, state: 'completed', result: 'failed' }),
    ]);
    expect(state.scaleSets).toEqual([expect.objectContaining({ id: ss, name: 'via-http' })]);
    expect(state.sessions).toEqual([expect.objectContaining({ scaleSetId: ss })]);
  });

  it('assigns and starts jobs by id through /runners/{name}/assign and /start', async () => {
    const conn = await connectAdmin(sim);
    const ss = (await createScaleSet(conn, 'manual')).id as number;
    await generateJit(conn, ss, 'm-runner');
    sim.setTiming({ autoStartJobs: false });
    const job = sim.enqueueJob({ scaleSetId: ss });
    expect(obj(await admin('POST', 'runners/m-runner/assign', { jobId: job.jobId }))).toMatchObject({
      state: 'acquired',
      runnerName: 'm-runner',
    });
    expect(obj(await admin('POST', 'runners/m-runner/start', {}))).toMatchObject({
      jobId: job.jobId,
      state: 'running',
    });
  });

  it('serves counters and faults, token lifetimes, the clock and token expiry', async () => {
    const conn = await connectAdmin(sim);
    expect(obj(await admin('GET', 'calls'))).toMatchObject({ 'POST actions/runner-registration': 1 });
    expect(obj(await admin('GET', 'calls?route=POST%20actions/runner-registration'))).toEqual({
      'POST actions/runner-registration': 1,
    });
    expect((await admin('DELETE', 'calls')).status).toBe(204);
    expect(obj(await admin('GET', 'calls'))).toEqual({});

    const { id } = obj(
      await admin('POST', 'faults', { route: 'GET runnergroups', status: 503, times: 5 }),
    ) as { id: number };
    expect(await admin('GET', 'faults').then((r) => r.json)).toEqual([
      expect.objectContaining({ id, remaining: 5 }),
    ]);
    expect((await call('GET', apiUrl(conn, 'runtime/runnergroups/'), { auth: conn.auth })).status).toBe(503);
    expect((await admin('DELETE', `faults/${id}`)).status).toBe(204);
    expect((await call('GET', apiUrl(conn, 'runtime/runnergroups/'), { auth: conn.auth })).status).toBe(200);

    expect(obj(await admin('PUT', 'token-lifetimes', { adminTokenSeconds: 120 }))).toMatchObject({
      adminTokenSeconds: 120,
    });
    expect(obj(await admin('PUT', 'timing', { longPollTimeoutMs: 10 }))).toMatchObject({
      longPollTimeoutMs: 10,
    });
    const before = sim.now().getTime();
    await admin('POST', 'clock/advance', { ms: 60_000 });
    expect(sim.now().getTime() - before).toBeGreaterThanOrEqual(60_000);

    await admin('POST', 'tokens/expire', { queue: false });
    expect((await call('GET', apiUrl(conn, 'runtime/runnergroups/'), { auth: conn.auth })).status).toBe(401);
  });

  it('deletes a scale set as GitHub does to an offline one: its session closes, its runners go', async () => {
    const conn = await connectAdmin(sim);
    const ss = (await createScaleSet(conn, 'offline')).id as number;
    await createSession(conn, ss);
    await generateJit(conn, ss, 'offline-runner');
    expect(sim.sessions()).toHaveLength(1);
    expect((await admin('DELETE', `scalesets/${ss}`)).status).toBe(204);
    expect(sim.scaleSet(ss)).toBeUndefined();
    expect(sim.sessions()).toEqual([]);
    expect(sim.registrations({ scaleSetId: ss })).toEqual([]);
    // The product finds it gone as it would on GitHub: 404 on the scale set.
    expect(
      (await call('GET', apiUrl(conn, `runtime/runnerscalesets/${ss}`), { auth: conn.auth })).status,
    ).toBe(404);
    const again = await admin('DELETE', `scalesets/${ss}`);
    expect(again.status).toBe(404);
    expect(obj(again).error).toContain(String(ss));
  });

  it('opens a fault window that faults a share of protocol calls and closes by itself', async () => {
    const conn = await connectAdmin(sim);
    const opened = obj(await admin('POST', 'fault-windows', { kind: 'throttled', seconds: 0.3, share: 1 }));
    expect(opened).toMatchObject({ kind: 'throttled', seconds: 0.3, share: 1 });
    expect((await admin('GET', 'fault-windows')).json).toEqual([expect.objectContaining({ id: opened.id })]);
    const throttled = await call('GET', apiUrl(conn, 'runtime/runnergroups/'), { auth: conn.auth });
    expect(throttled.status).toBe(429);
    expect(throttled.headers.get('retry-after')).toBe('2');
    // Admin calls are never faulted, so the window can be watched while it is open.
    expect((await admin('GET', 'state')).status).toBe(200);
    await new Promise((r) => setTimeout(r, 400));
    expect((await admin('GET', 'fault-windows')).json).toEqual([]);
    expect(sim.faults()).toEqual([]);
    expect((await call('GET', apiUrl(conn, 'runtime/runnergroups/'), { auth: conn.auth })).status).toBe(200);
    const refused = await admin('POST', 'fault-windows', { kind: 'flood', seconds: 1 });
    expect(refused.status).toBe(400);
    expect(obj(refused).error).toContain('server-errors, throttled, slow, reset');
  });

  it('answers 404 to an unknown admin path and 400 with the reason to a refused operation', async () => {
    expect((await admin('GET', 'nope')).status).toBe(404);
    const refused = await admin('POST', 'runners/ghost/connect');
    expect(refused.status).toBe(400);
    expect(obj(refused).error).toContain('ghost');
    expect((await admin('POST', 'orgs', { name: 7 })).status).toBe(400);
  });
});

describe('simulator seed', () => {
  it('starts empty of defaults when asked, with only the seeded owners and credentials', async () => {
    const sim = await startSimulator({
      seed: { defaults: false, orgs: [{ name: 'solo' }], pats: [{ token: 'ghp_solo' }] },
    });
    try {
      await expect(registrationToken(sim, { org: 'solo' }, 'ghp_solo')).resolves.toBeTruthy();
      const r = await call('POST', `${sim.url}/api/v3/orgs/octo/actions/runners/registration-token`, {
        auth: 'Bearer ghp_solo',
      });
      expect(r.status).toBe(404);
      expect(
        (
          await call('POST', `${sim.url}/api/v3/orgs/solo/actions/runners/registration-token`, {
            auth: 'Bearer ghp_simulator',
          })
        ).status,
      ).toBe(401);
    } finally {
      await sim.stop();
    }
  });

  it('loads a seed file whose app key is given by a path relative to the file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sim-seed-'));
    try {
      const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      writeFileSync(join(dir, 'app.pem'), publicKey.export({ type: 'spki', format: 'pem' }));
      writeFileSync(
        join(dir, 'seed.json'),
        JSON.stringify({
          repos: ['team/svc'],
          apps: [{ appId: 77, publicKeyPath: 'app.pem', installations: [{ org: 'team' }] }],
        }),
      );
      const seed = loadSeedFile(join(dir, 'seed.json'));
      const sim = await startSimulator({ seed });
      try {
        expect(sim.apps()).toEqual([
          expect.objectContaining({
            appId: 77,
            installations: [expect.objectContaining({ owner: { org: 'team' } })],
          }),
        ]);
        expect(sim.configUrl({ org: 'team', repo: 'svc' })).toBe(`${sim.url}/team/svc`);
      } finally {
        await sim.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names the seed file in the error when it cannot be read', () => {
    expect(() => loadSeedFile('/nonexistent/seed.json')).toThrow(/\/nonexistent\/seed.json/);
  });
});
