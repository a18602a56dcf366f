import { startSimulator, type RunningSimulator } from './index';
import {
  apiUrl,
  call,
  connectAdmin,
  createScaleSet,
  generateJit,
  obj,
  type AdminConnection,
} from './spec-helpers';

describe('simulator fault injection and call counters', () => {
  let sim: RunningSimulator;
  let conn: AdminConnection;
  let groupsUrl: string;

  beforeEach(async () => {
    sim = await startSimulator();
    conn = await connectAdmin(sim);
    groupsUrl = apiUrl(conn, 'runtime/runnergroups/', { groupName: 'Default' });
  });

  afterEach(() => sim.stop());

  it('answers N calls with 503 and Retry-After, then serves normally', async () => {
    sim.injectFault({ route: 'GET runnergroups', status: 503, retryAfterSeconds: 2, times: 2 });
    const first = await call('GET', groupsUrl, { auth: conn.auth });
    expect(first.status).toBe(503);
    expect(first.headers.get('retry-after')).toBe('2');
    expect(obj(first).typeName).toEqual(expect.any(String));
    expect(first.headers.get('activityid')).toBeTruthy();
    expect((await call('GET', groupsUrl, { auth: conn.auth })).status).toBe(503);
    expect((await call('GET', groupsUrl, { auth: conn.auth })).status).toBe(200);
  });

  it('injects 429 with Retry-After and 501 on the route named, not on others', async () => {
    sim.injectFault({ route: 'GET runnergroups', status: 429, retryAfterSeconds: 1, times: 1 });
    sim.injectFault({ route: 'POST runnerscalesets', status: 501, times: 1 });
    const throttled = await call('GET', groupsUrl, { auth: conn.auth });
    expect([throttled.status, throttled.headers.get('retry-after')]).toEqual([429, '1']);
    const notImplemented = await call('POST', apiUrl(conn, 'runtime/runnerscalesets'), {
      auth: conn.auth,
      body: { name: 'x' },
    });
    expect(notImplemented.status).toBe(501);
    expect(sim.scaleSets()).toEqual([]);
    expect(
      (await call('GET', apiUrl(conn, 'distributedtask/pools/0/agents'), { auth: conn.auth })).status,
    ).toBe(200);
  });

  it('drops the connection without an answer', async () => {
    sim.injectFault({ route: 'GET runnergroups', drop: true, times: 1 });
    await expect(call('GET', groupsUrl, { auth: conn.auth })).rejects.toThrow();
    expect((await call('GET', groupsUrl, { auth: conn.auth })).status).toBe(200);
  });

  it('delays a call by latencyMs and still answers it', async () => {
    sim.injectFault({ route: 'GET runnergroups', latencyMs: 50, times: 1 });
    expect((await call('GET', groupsUrl, { auth: conn.auth })).status).toBe(200);
  });

  it('prefixes JSON bodies with a UTF-8 BOM', async () => {
    sim.injectFault({ route: 'GET runnergroups', bom: true, times: 1 });
    const r = await fetch(groupsUrl, { headers: { Authorization: conn.auth } });
    const bytes = Buffer.from(await r.arrayBuffer());
    expect([...bytes.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
    expect(Number(r.headers.get('content-length'))).toBe(bytes.length);
    expect(JSON.parse(bytes.subarray(3).toString('utf8'))).toMatchObject({ count: 1 });
  });

  it('sends error bodies as text/plain, or empty with Content-Length 0', async () => {
    const ss = (await createScaleSet(conn, 'faulty')).id as number;
    await generateJit(conn, ss, 'taken');
    const jit = apiUrl(conn, `runtime/runnerscalesets/${ss}/generatejitconfig`);
    sim.injectFault({
      route: 'POST runnerscalesets/{id}/generatejitconfig',
      textPlainErrors: true,
      times: 1,
    });
    const plain = await call('POST', jit, { auth: conn.auth, body: { name: 'taken', workFolder: '' } });
    expect(plain.status).toBe(409);
    expect(plain.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(plain.text).toContain('taken');

    sim.injectFault({
      route: 'POST runnerscalesets/{id}/generatejitconfig',
      emptyErrorBodies: true,
      times: 1,
    });
    const empty = await call('POST', jit, { auth: conn.auth, body: { name: 'taken', workFolder: '' } });
    expect([empty.status, empty.text, empty.headers.get('content-length')]).toEqual([409, '', '0']);
  });

  it('applies errorRate 0 to no call and 1 to every call; "*" matches every route', async () => {
    const never = sim.injectFault({ route: '*', status: 500, errorRate: 0 });
    expect((await call('GET', groupsUrl, { auth: conn.auth })).status).toBe(200);
    sim.removeFault(never);
    sim.injectFault({ route: '*', status: 500, errorRate: 1, times: 2 });
    expect((await call('GET', groupsUrl, { auth: conn.auth })).status).toBe(500);
    expect(
      (await call('GET', apiUrl(conn, 'distributedtask/pools/0/agents'), { auth: conn.auth })).status,
    ).toBe(500);
    expect((await call('GET', groupsUrl, { auth: conn.auth })).status).toBe(200);
  });

  it('keeps faults until cleared when times is absent', async () => {
    sim.injectFault({ route: 'GET runnergroups', status: 502 });
    for (let i = 0; i < 3; i++) expect((await call('GET', groupsUrl, { auth: conn.auth })).status).toBe(502);
    sim.clearFaults();
    expect((await call('GET', groupsUrl, { auth: conn.auth })).status).toBe(200);
  });

  it('rejects a fault without a route or with an errorRate outside 0..1', () => {
    expect(() => sim.injectFault({ route: '' })).toThrow(/route/);
    expect(() => sim.injectFault({ route: '*', errorRate: 2 })).toThrow(/errorRate/);
  });

  it('counts calls per method and route template, including faulted and refused ones, and resets', async () => {
    sim.resetCallCounts();
    const ss = (await createScaleSet(conn, 'counted')).id as number;
    const { runner } = (await generateJit(conn, ss, 'r')) as { runner: { id: number } };
    await call('DELETE', apiUrl(conn, `distributedtask/pools/0/agents/${runner.id}`), { auth: conn.auth });
    await call('DELETE', apiUrl(conn, `distributedtask/pools/0/agents/${runner.id}`), { auth: conn.auth });
    sim.injectFault({ route: 'GET runnergroups', status: 500, times: 1 });
    await call('GET', groupsUrl, { auth: conn.auth });
    await call('GET', `${sim.url}/no/such/route`);
    expect(sim.callCounts()).toEqual({
      'DELETE agents/{id}': 2,
      'GET <unmatched>': 1,
      'GET runnergroups': 1,
      'POST runnerscalesets': 1,
      'POST runnerscalesets/{id}/generatejitconfig': 1,
    });
    expect(sim.callCount('DELETE agents/{id}')).toBe(2);
    sim.resetCallCounts();
    expect(sim.callCounts()).toEqual({});
  });

  it('answers an unknown route 404 and a wrong method 405 in the route dialect', async () => {
    const rest = await call('GET', `${sim.url}/api/v3/nothing`);
    expect(rest.status).toBe(404);
    expect(rest.headers.get('x-github-request-id')).toBeTruthy();
    expect(obj(rest).message).toEqual(expect.any(String));
    const wrong = await call('PUT', apiUrl(conn, 'runtime/runnerscalesets/1'), { auth: conn.auth, body: {} });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toContain('GET');
  });
});
