import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { createServer as createNetServer, type AddressInfo, type Server as NetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { silentLogger } from '@aro/observability';
import { Registry } from 'prom-client';
import { createDispatchers, type ProxySettings } from './dispatchers';
import {
  ActionsError,
  errorFromResponse,
  isProxyFailure,
  isRateLimited,
  isSessionGone,
  isTlsFailure,
} from './errors';
import { ActionsMetrics } from './metrics';
import { resolveRetryOptions } from './retry';
import { FakeGitHub } from './testing/fake-github';
import { HttpTransport } from './transport';

/*
 * The kinds are fed real failures, made on loopback: a server whose certificate nobody trusts, a proxy
 * that refuses the tunnel or is not there, a service that says 429 or forgot the session. The kind must
 * come from where the failure arose (codes, the proxy client, status and body), never from wording.
 */

const listen = <S extends NetServer | HttpsServer>(server: S): Promise<number> =>
  new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );

const close = (server: NetServer | HttpsServer): Promise<void> =>
  new Promise((resolve) => server.close(() => resolve()));

/** A loopback port nobody listens on: bound once, then released. */
async function closedPort(): Promise<number> {
  const s = createNetServer();
  const port = await listen(s);
  await close(s);
  return port;
}

/** A proxy that answers every CONNECT with `status` and closes. */
function refusingProxy(status: number): NetServer {
  return createNetServer((socket) => {
    socket.once('data', () => socket.end(`HTTP/1.1 ${status} Refused\r\ncontent-length: 0\r\n\r\n`));
    socket.on('error', () => undefined);
  });
}

function transportWith(proxy?: ProxySettings): { transport: HttpTransport; waits: number[] } {
  const waits: number[] = [];
  const transport = new HttpTransport({
    dispatchers: createDispatchers({ proxy, connectTimeoutMs: 5000, tunnelTimeoutMs: 5000 }),
    userAgent: 'test',
    timeoutMs: 10_000,
    retry: resolveRetryOptions({}),
    metrics: new ActionsMetrics(new Registry()),
    logger: silentLogger,
    sleep: async (ms) => {
      waits.push(ms);
    },
    random: () => 0,
  });
  return { transport, waits };
}

async function failureOf(transport: HttpTransport, url: string): Promise<ActionsError> {
  try {
    await transport.send({
      method: 'GET',
      url: new URL(url),
      route: 'GET x',
      headers: {},
      repeat: 'idempotent',
    });
  } catch (e) {
    expect(e).toBeInstanceOf(ActionsError);
    return e as ActionsError;
  }
  throw new Error(`GET ${url} succeeded`);
}

describe('errors classified where they arise', () => {
  let transport: HttpTransport | undefined;
  afterEach(async () => {
    await transport?.close();
    transport = undefined;
  });

  describe('TLS', () => {
    let dir: string;
    let server: HttpsServer;
    let port: number;

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'aro-tls-'));
      await promisify(execFile)('openssl', [
        ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'],
        ...['-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1'],
        ...['-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'],
      ]);
      server = createHttpsServer(
        { key: await readFile(join(dir, 'key.pem')), cert: await readFile(join(dir, 'cert.pem')) },
        (_req, res) => res.end('{}'),
      );
      port = await listen(server);
    });

    afterAll(async () => {
      await close(server);
      await rm(dir, { recursive: true, force: true });
    });

    it('a self-signed server certificate is a TlsFailure, and is not retried', async () => {
      const t = transportWith();
      transport = t.transport;
      const err = await failureOf(t.transport, `https://127.0.0.1:${port}/x`);
      expect(err.kind).toBe('TlsFailure');
      expect(isTlsFailure(err)).toBe(true);
      expect(isTlsFailure(new Error('while creating a scale set', { cause: err }))).toBe(true);
      expect(t.waits).toEqual([]);
    });
  });

  describe('proxy', () => {
    it('a proxy refusing the CONNECT tunnel with 407 is a ProxyFailure, and is not retried', async () => {
      const proxy = refusingProxy(407);
      const proxyPort = await listen(proxy);
      try {
        const t = transportWith({ https: `http://127.0.0.1:${proxyPort}` });
        transport = t.transport;
        const err = await failureOf(t.transport, `https://127.0.0.1:${await closedPort()}/x`);
        expect(err.kind).toBe('ProxyFailure');
        expect(isProxyFailure(err)).toBe(true);
        expect(err.message).toContain('407');
        expect(t.waits).toEqual([]);
      } finally {
        await close(proxy);
      }
    });

    it('a proxy refusing the tunnel otherwise (502) is a ProxyFailure that is retried: nothing was sent', async () => {
      const proxy = refusingProxy(502);
      const proxyPort = await listen(proxy);
      try {
        const t = transportWith({ https: `http://127.0.0.1:${proxyPort}` });
        transport = t.transport;
        const err = await failureOf(t.transport, `https://127.0.0.1:${await closedPort()}/x`);
        expect(err.kind).toBe('ProxyFailure');
        expect(t.waits).toHaveLength(4);
      } finally {
        await close(proxy);
      }
    });

    it('a proxy that refuses connections is a ProxyFailure, tunnelled (https) or not (http)', async () => {
      const proxyUrl = `http://127.0.0.1:${await closedPort()}`;
      const target = await closedPort();
      const t = transportWith({ http: proxyUrl, https: proxyUrl });
      transport = t.transport;
      expect((await failureOf(t.transport, `https://127.0.0.1:${target}/x`)).kind).toBe('ProxyFailure');
      expect((await failureOf(t.transport, `http://127.0.0.1:${target}/x`)).kind).toBe('ProxyFailure');
    });

    it('a refused connection without a proxy is no ProxyFailure', async () => {
      const t = transportWith();
      transport = t.transport;
      const err = await failureOf(t.transport, `http://127.0.0.1:${await closedPort()}/x`);
      expect(err.kind).toBe('Other');
      expect(isProxyFailure(err)).toBe(false);
    });
  });

  describe('service answers', () => {
    let gh: FakeGitHub;
    beforeAll(async () => {
      gh = await FakeGitHub.start();
    });
    afterAll(async () => {
      await gh.close();
    });

    async function answered(status: number, body: unknown): Promise<ActionsError> {
      gh.handler = () => ({ status, body });
      const t = transportWith();
      transport = t.transport;
      const url = new URL(`${gh.url}/_apis/runtime/runnerscalesets/1/sessions/s`);
      const res = await t.transport.send({
        method: 'PATCH',
        url,
        route: 'PATCH session',
        headers: {},
        repeat: 'idempotent',
      });
      return errorFromResponse({
        method: 'PATCH',
        url: url.href,
        statusCode: res.status,
        contentType: res.headers['content-type'],
        body: res.body,
        onMessageQueue: false,
      });
    }

    it('429 is RateLimited', async () => {
      const err = await answered(429, { message: 'slow down' });
      expect(err.kind).toBe('RateLimited');
      expect(isRateLimited(err)).toBe(true);
    });

    it('a session the service dropped is SessionGone, by the exception it names', async () => {
      const err = await answered(400, {
        typeName:
          'GitHub.DistributedTask.WebApi.TaskAgentSessionExpiredException, GitHub.DistributedTask.WebApi',
        message: 'The session has expired.',
      });
      expect(err.kind).toBe('SessionGone');
      expect(isSessionGone(err)).toBe(true);
    });

    it('a message that merely mentions a session, a proxy or a certificate names no kind', async () => {
      const err = await answered(400, { message: 'session expired; proxy certificate self-signed' });
      expect(err.kind).toBe('Other');
    });
  });
});
