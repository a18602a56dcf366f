import { silentLogger } from '@aro/observability';
import { Registry } from 'prom-client';
import { ActionsServiceClient, ActionsClientOptions } from './client';
import { ActionsError, isRunnerExists } from './errors';
import { FakeGitHub, startSilentProxy } from './testing/fake-github';
import { aroVersion } from './user-agent';

/**
 * A count the silent proxy keeps, once it has reached `expected` or 2 s passed: its accept is I/O that
 * runs after the client's timers when the event loop stalls (see `FakeGitHub.caughtUp`).
 */
async function settledCount(count: () => number, expected: number): Promise<number> {
  const until = Date.now() + 2_000;
  while (count() < expected && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  return count();
}

const vss = (typeName: string, message: string) => ({ typeName, message });

describe('ActionsServiceClient (against a scripted local server)', () => {
  let gh: FakeGitHub;
  let registry: Registry;
  const clients: ActionsServiceClient[] = [];

  beforeEach(async () => {
    gh = await FakeGitHub.start();
    registry = new Registry();
  });

  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await gh.close();
  });

  function client(extra: Partial<ActionsClientOptions> = {}): ActionsServiceClient {
    const c = new ActionsServiceClient({
      configUrl: `${gh.url}/my-org`,
      credentials: { kind: 'pat', token: 'ghp_secret' },
      logger: silentLogger,
      registry,
      retry: { maxRetries: 3, minWaitMs: 1, maxWaitMs: 5 },
      requestTimeoutMs: 2000,
      ...extra,
    });
    clients.push(c);
    return c;
  }

  it('registers with the PAT and calls the Actions service with the admin token, api-version and the ARO user agent', async () => {
    gh.handler = () => ({ status: 200, body: { id: 17, name: 'r1', runnerScaleSetId: 5 } });
    const runner = await client({ userAgent: 'controller' }).getRunner(17);

    expect(runner).toEqual({ id: 17, name: 'r1', runnerScaleSetId: 5 });
    const [token, registration, call] = gh.requests;
    expect(token.path).toBe('/api/v3/orgs/my-org/actions/runners/registration-token');
    expect(token.headers.authorization).toBe('Bearer ghp_secret');
    expect(registration.path).toBe('/api/v3/actions/runner-registration');
    expect(registration.headers.authorization).toBe('RemoteAuth registration-token');
    expect(JSON.parse(registration.body)).toEqual({ url: `${gh.url}/my-org`, runner_event: 'register' });
    expect(call.method).toBe('GET');
    expect(call.path).toBe('/tenant/1/_apis/distributedtask/pools/0/agents/17');
    expect(call.query.get('api-version')).toBe('6.0-preview');
    expect(call.headers.authorization).toMatch(/^Bearer .+\..+\..+/);
    expect(call.headers['user-agent']).toContain(`ARO/${aroVersion}`);
    expect(call.headers['user-agent']).toContain('controller');
  });

  it('keeps the trailing slash of the runner-groups route and escapes query values', async () => {
    gh.handler = () => ({
      status: 200,
      body: { count: 1, value: [{ id: 2, name: 'a & b', size: 0, isDefaultGroup: false }] },
    });
    const group = await client().getRunnerGroupByName('a & b');
    expect(group.id).toBe(2);
    const call = gh.requests[2];
    expect(call.path).toBe('/tenant/1/_apis/runtime/runnergroups/');
    expect(call.query.get('groupName')).toBe('a & b');
  });

  it('shares one credential exchange among concurrent callers', async () => {
    gh.handler = () => ({ status: 200, body: { count: 0, value: [] } });
    const c = client();
    await Promise.all(Array.from({ length: 8 }, (_, i) => c.getRunnerByName(`r${i}`)));
    expect(gh.count('POST', '/actions/runner-registration')).toBe(1);
    expect(gh.count('GET', '/agents')).toBe(8);
  });

  it('obtains a new admin token once the current one is within the refresh margin of expiry', async () => {
    gh.handler = () => ({ status: 200, body: { count: 0, value: [] } });
    gh.adminTokenLifetimeS = 30;
    const c = client();
    await c.listRunners();
    await c.listRunners();
    expect(gh.adminTokensIssued).toBe(2);

    gh.adminTokenLifetimeS = 3600;
    await c.listRunners();
    await c.listRunners();
    expect(gh.adminTokensIssued).toBe(3);
  });

  it('re-authenticates once when the service refuses the admin token, even for a call that must not repeat', async () => {
    let refused = false;
    gh.handler = (r) => {
      if (!refused) {
        refused = true;
        return { status: 401, body: vss('UnauthorizedException', 'token revoked') };
      }
      return {
        status: 200,
        body: { runner: { id: 3, name: r.body, runnerScaleSetId: 5 }, encodedJITConfig: 'jit' },
      };
    };
    const jit = await client().generateJitRunnerConfig({ name: 'runner-a' }, 5);
    expect(jit.encodedJITConfig).toBe('jit');
    expect(gh.adminTokensIssued).toBe(2);
    expect(gh.count('POST', '/generatejitconfig')).toBe(2);
  });

  it('retries runner-registration while it answers 401/403', async () => {
    gh.registrationFailures = { status: 403, times: 2 };
    gh.handler = () => ({ status: 204 });
    await client().removeRunner(9);
    expect(gh.count('POST', '/actions/runner-registration')).toBe(3);
  });

  it('turns a VSS exception into a typed error with status and activity id', async () => {
    gh.handler = () => ({
      status: 409,
      body: vss('GitHub.DistributedTask.WebApi.TaskAgentExistsException', 'exists'),
    });
    const err = await client()
      .generateJitRunnerConfig({ name: 'dup' }, 5)
      .catch((e: unknown) => e);
    expect(isRunnerExists(err)).toBe(true);
    expect(err).toMatchObject({
      statusCode: 409,
      activityId: expect.stringMatching(/^activity-/),
      method: 'POST',
    });
  });

  it('retries a GET whose connection was dropped, and does not repeat a JIT config request after a drop', async () => {
    let getCalls = 0;
    gh.handler = (r) => {
      if (r.method === 'GET')
        return ++getCalls === 1 ? 'drop' : { status: 200, body: { id: 1, name: 'x', runnerScaleSetId: 1 } };
      return 'drop';
    };
    const c = client();
    await expect(c.getRunner(1)).resolves.toMatchObject({ id: 1 });
    expect(getCalls).toBe(2);

    const err = (await c
      .generateJitRunnerConfig({ name: 'once' }, 1)
      .catch((e: unknown) => e)) as ActionsError;
    expect(err).toBeInstanceOf(ActionsError);
    expect(err.message).toContain('must not be repeated');
    expect(gh.count('POST', '/generatejitconfig')).toBe(1);
  });

  it('bounds every attempt with the request timeout, and does not repeat a POST that timed out', async () => {
    gh.handler = () => 'hang';
    const c = client({ requestTimeoutMs: 150, retry: { maxRetries: 1, minWaitMs: 1, maxWaitMs: 1 } });
    await expect(c.getRunner(1)).rejects.toThrow(
      /no complete response within 150 ms.*gave up after 2 attempt/,
    );
    // An attempt whose connection had not opened when the timer fired sent nothing, so a stalled
    // event loop can cost one of the two; the retry opens a fresh connection, seen unless a second
    // stall hits it too.
    await gh.caughtUp();
    expect(gh.count('GET', '/agents/1')).toBeGreaterThanOrEqual(1);
    expect(gh.count('GET', '/agents/1')).toBeLessThanOrEqual(2);
    await expect(c.createRunnerScaleSet({ name: 's', runnerGroupId: 1 })).rejects.toThrow(
      /may have reached the server and must not be repeated/,
    );
    // At most once: 0 when the timer fired before the connection opened (a stalled event loop).
    await gh.caughtUp();
    expect(gh.count('POST', '/runnerscalesets')).toBeLessThanOrEqual(1);
  });

  it('fails within the timeout when a proxy never answers CONNECT', async () => {
    const proxy = await startSilentProxy();
    try {
      const c = client({
        proxy: { http: proxy.url },
        requestTimeoutMs: 200,
        retry: { maxRetries: 0, minWaitMs: 1, maxWaitMs: 1 },
      });
      await expect(c.listRunners()).rejects.toThrow(/no complete response within 200 ms/);
      expect(await settledCount(() => proxy.connections(), 1)).toBeGreaterThan(0);
      expect(gh.requests).toHaveLength(0);
    } finally {
      await proxy.close();
    }
  });

  it('counts attempts and retries under route templates, never raw URLs', async () => {
    let n = 0;
    gh.handler = () => (++n === 1 ? { status: 502 } : { status: 204 });
    await client().removeRunner(12345);
    const text = await registry.metrics();
    expect(text).toContain('actions_requests_total{route="DELETE agents/{id}",method="DELETE",code="502"} 1');
    expect(text).toContain('actions_requests_total{route="DELETE agents/{id}",method="DELETE",code="204"} 1');
    expect(text).toContain('actions_request_retries_total{route="DELETE agents/{id}",method="DELETE"} 1');
    expect(text).not.toContain('12345');
  });

  it('surfaces the last status once retries are exhausted', async () => {
    gh.handler = () => ({ status: 500, body: vss('InternalServerException', 'boom') });
    const err = (await client()
      .deleteRunnerScaleSet(4)
      .catch((e: unknown) => e)) as ActionsError;
    expect(err.statusCode).toBe(500);
    expect(err.message).toContain('after 4 attempts');
  });

  it('strips a UTF-8 BOM before decoding JSON', async () => {
    const json = Buffer.from(JSON.stringify({ id: 7, name: 'bom', runnerScaleSetId: 1 }));
    gh.handler = () => ({ status: 200, raw: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), json]) });
    await expect(client().getRunner(7)).resolves.toEqual({ id: 7, name: 'bom', runnerScaleSetId: 1 });
  });

  it('stops when the caller aborts, without waiting for the timeout', async () => {
    gh.handler = () => 'hang';
    const ac = new AbortController();
    const pending = client({ requestTimeoutMs: 60_000 }).getRunner(1, { signal: ac.signal });
    setTimeout(() => ac.abort(new Error('shutting down')), 50);
    await expect(pending).rejects.toThrow('shutting down');
  });
});
