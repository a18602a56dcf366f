import { silentLogger } from '@aro/observability';
import { Registry } from 'prom-client';
import { createDispatchers } from './dispatchers';
import { ActionsMetrics } from './metrics';
import { resolveRetryOptions } from './retry';
import { ActionsError } from './errors';
import { FakeGitHub, startSilentProxy } from './testing/fake-github';
import { HttpTransport } from './transport';

describe('HttpTransport retries', () => {
  let gh: FakeGitHub;
  let transport: HttpTransport;
  let waits: number[];

  beforeEach(async () => {
    gh = await FakeGitHub.start();
    waits = [];
    transport = new HttpTransport({
      dispatchers: createDispatchers(),
      userAgent: 'test',
      timeoutMs: 2000,
      retry: resolveRetryOptions({}),
      metrics: new ActionsMetrics(new Registry()),
      logger: silentLogger,
      // Record the waits instead of sleeping them: the policy is what is under test.
      sleep: async (ms) => {
        waits.push(ms);
      },
      random: () => 0,
    });
  });

  afterEach(async () => {
    await transport.close();
    await gh.close();
  });

  const send = (method: 'GET' | 'POST', repeat: 'idempotent' | 'once') =>
    transport.send({ method, url: new URL(`${gh.url}/x`), route: `${method} x`, headers: {}, repeat });

  it('waits what Retry-After asks on 429 and 503, and backs off exponentially otherwise', async () => {
    const answers = [
      { status: 429, headers: { 'retry-after': '7' } },
      { status: 503, headers: { 'retry-after': '2' } },
      { status: 502 },
      { status: 500 },
      { status: 200, body: {} },
    ];
    gh.handler = () => answers.shift() ?? { status: 200 };
    const res = await send('GET', 'idempotent');
    expect(res.status).toBe(200);
    expect(res.attempts).toBe(5);
    expect(waits).toEqual([7000, 2000, 4000, 8000]);
  });

  it('gives up after 4 retries and returns the last response', async () => {
    gh.handler = () => ({ status: 503 });
    const res = await send('GET', 'idempotent');
    expect(res).toMatchObject({ status: 503, attempts: 5 });
    expect(gh.requests).toHaveLength(5);
  });

  it('retries a call that must not repeat on 429/503 but not on 500 or 504', async () => {
    const answers = [{ status: 429 }, { status: 503 }, { status: 504 }];
    gh.handler = () => answers.shift() ?? { status: 200 };
    const res = await send('POST', 'once');
    expect(res.status).toBe(504);
    expect(gh.requests).toHaveLength(3);
  });

  it('sends consecutive calls over one kept-alive connection', async () => {
    gh.handler = () => ({ status: 200, body: {} });
    for (let i = 0; i < 3; i++) expect((await send('GET', 'idempotent')).status).toBe(200);
    expect(gh.requests).toHaveLength(3);
    expect(new Set(gh.requests.map((r) => r.clientPort)).size).toBe(1);
  });

  it('never retries 501', async () => {
    gh.handler = () => ({ status: 501 });
    expect((await send('GET', 'idempotent')).status).toBe(501);
    expect(gh.requests).toHaveLength(1);
  });

  it('sends a call that must not repeat at most once when the connection dropped after sending it', async () => {
    // The server has the whole request, then the connection goes: it may have acted on it.
    gh.handler = () => 'drop';
    const err = await transport
      .send({
        method: 'POST',
        url: new URL(`${gh.url}/generatejitconfig`),
        route: 'POST generatejitconfig',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'runner-1' }),
        repeat: 'once',
      })
      .catch((e: unknown) => e);
    expect(String(err)).toMatch(/must not be repeated/);
    expect(gh.requests.map((r) => `${r.method} ${r.path} ${r.body}`)).toEqual([
      'POST /generatejitconfig {"name":"runner-1"}',
    ]);
    expect(waits).toEqual([]);
  });

  it('sends an idempotent call again when the connection dropped after sending it', async () => {
    let calls = 0;
    gh.handler = () => (++calls === 1 ? 'drop' : { status: 200, body: {} });
    const res = await send('GET', 'idempotent');
    expect(res).toMatchObject({ status: 200, attempts: 2 });
    expect(gh.requests).toHaveLength(2);
  });

  it('retries a call that must not repeat when the connection was refused, since nothing was sent', async () => {
    const closedPort = new URL(gh.url);
    await gh.close();
    const refused = transport.send({
      method: 'POST',
      url: new URL('/x', closedPort),
      route: 'POST x',
      headers: {},
      repeat: 'once',
    });
    await expect(refused).rejects.toThrow(/ECONNREFUSED.*gave up after 5 attempt/);
    expect(waits).toHaveLength(4);
    gh = await FakeGitHub.start();
  });
});

describe('HttpTransport through a proxy that never answers CONNECT', () => {
  let proxy: Awaited<ReturnType<typeof startSilentProxy>>;
  beforeEach(async () => {
    proxy = await startSilentProxy();
  });
  afterEach(async () => {
    await proxy.close();
  });

  const transportVia = (tunnelTimeoutMs: number) =>
    new HttpTransport({
      dispatchers: createDispatchers({ proxy: { http: proxy.url }, tunnelTimeoutMs }),
      userAgent: 'test',
      // Far beyond the test's own timeout: only the tunnel's deadline or close() can end the call.
      timeoutMs: 600_000,
      retry: resolveRetryOptions({ maxRetries: 0 }),
      metrics: new ActionsMetrics(new Registry()),
      logger: silentLogger,
    });

  const call = (t: HttpTransport) =>
    t
      .send({
        method: 'GET',
        url: new URL('http://127.0.0.1:9/x'),
        route: 'GET x',
        headers: {},
        repeat: 'idempotent',
      })
      .catch((e: unknown) => e);

  it('gives up on the tunnel at its deadline, as a ProxyFailure, and closes the connection to the proxy', async () => {
    const t = transportVia(300);
    try {
      const err = await call(t);
      expect(err).toBeInstanceOf(ActionsError);
      expect((err as ActionsError).kind).toBe('ProxyFailure');
      expect(proxy.connections()).toBe(1);
      await waitFor(() => proxy.open() === 0);
    } finally {
      await t.close();
    }
  });

  it('closing the client ends a tunnel being opened', async () => {
    const t = transportVia(600_000);
    const pending = call(t);
    await waitFor(() => proxy.open() === 1);
    await t.close(0);
    expect(await pending).toBeInstanceOf(Error);
    await waitFor(() => proxy.open() === 0);
  });
});

async function waitFor(ok: () => boolean, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}
