// Shared pieces of the Actions client contract tests: a client wired to the in-process simulator,
// a tiny HTTP CONNECT proxy, and a TLS front (certificates from the openssl CLI) for the simulator.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import {
  AddressInfo,
  connect as tcpConnect,
  createServer as createTcpServer,
  Server,
  Socket,
} from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createTlsServer, TLSSocket } from 'node:tls';
import { promisify } from 'node:util';
import { ActionsClientOptions, ActionsServiceClient } from '@aro/actions';
import { silentLogger } from '@aro/observability';
import { Registry } from 'prom-client';
import { DEFAULT_PAT, RunningSimulator } from '../../../apps/simulator/src';

export const fastRetry = { maxRetries: 4, minWaitMs: 5, maxWaitMs: 50 };

/** Clients made in a test; closeClients() releases their sockets. */
const open: ActionsServiceClient[] = [];

export function simClient(
  sim: RunningSimulator,
  extra: Partial<ActionsClientOptions> & { registry?: Registry } = {},
): ActionsServiceClient {
  const c = new ActionsServiceClient({
    configUrl: sim.configUrl({ org: 'octo' }),
    credentials: { kind: 'pat', token: DEFAULT_PAT },
    logger: silentLogger,
    registry: extra.registry ?? new Registry(),
    retry: fastRetry,
    requestTimeoutMs: 10_000,
    ...extra,
  });
  open.push(c);
  return c;
}

export async function closeClients(): Promise<void> {
  await Promise.all(open.splice(0).map((c) => c.close()));
}

export async function errorOf(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('expected the call to fail, it succeeded');
}

// ---- a CONNECT proxy -------------------------------------------------------------------------

export interface ConnectProxy {
  url: string;
  /** `host:port` of every tunnel asked for, in order. */
  tunnels: string[];
  /** Proxy-Authorization headers seen. */
  authorizations: Array<string | undefined>;
  close(): Promise<void>;
}

/**
 * Accepts `CONNECT host:port`, checks Basic credentials when `credentials` is set (407 otherwise),
 * then pipes bytes both ways. Enough of a forward proxy for the client's CONNECT tunnels.
 */
export async function startConnectProxy(credentials?: { user: string; pass: string }): Promise<ConnectProxy> {
  const tunnels: string[] = [];
  const authorizations: Array<string | undefined> = [];
  const sockets = new Set<Socket>();
  const track = (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
  };
  const server: Server = createTcpServer((client) => {
    track(client);
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      client.off('data', onData);
      const lines = head.subarray(0, end).toString('latin1').split('\r\n');
      const rest = head.subarray(end + 4);
      const [method, target] = lines[0].split(' ');
      const auth = lines
        .find((l) => /^proxy-authorization:/i.test(l))
        ?.replace(/^proxy-authorization:\s*/i, '');
      if (method !== 'CONNECT') {
        client.end('HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n');
        return;
      }
      tunnels.push(target);
      authorizations.push(auth);
      const expected =
        credentials && `Basic ${Buffer.from(`${credentials.user}:${credentials.pass}`).toString('base64')}`;
      if (expected && auth !== expected) {
        client.end(
          'HTTP/1.1 407 Proxy Authentication Required\r\nproxy-authenticate: Basic\r\ncontent-length: 0\r\n\r\n',
        );
        return;
      }
      const [host, port] = [
        target.slice(0, target.lastIndexOf(':')),
        Number(target.slice(target.lastIndexOf(':') + 1)),
      ];
      const upstream = tcpConnect(port, host, () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        if (rest.length) upstream.write(rest);
        client.pipe(upstream);
        upstream.pipe(client);
      });
      track(upstream);
      upstream.on('error', () => client.destroy());
    };
    client.on('data', onData);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    tunnels,
    authorizations,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

// ---- a private CA and a TLS front ------------------------------------------------------------

const run = promisify(execFile);

export interface PrivatePki {
  caPem: string;
  certPem: string;
  keyPem: string;
}

/** A CA and a server certificate it signs for 127.0.0.1 / localhost, made with the openssl CLI. */
export async function createPrivatePki(): Promise<PrivatePki> {
  const dir = await mkdtemp(join(tmpdir(), 'aro-actions-pki-'));
  const p = (f: string) => join(dir, f);
  const openssl = (args: string[]) => run('openssl', args, { timeout: 30_000 });
  try {
    await writeFile(p('min.cnf'), '[req]\ndistinguished_name = dn\n[dn]\n');
    await openssl([
      'req',
      '-x509',
      '-config',
      p('min.cnf'),
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      p('ca.key'),
      '-out',
      p('ca.crt'),
      '-days',
      '2',
      '-subj',
      '/CN=ARO test CA',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ]);
    await openssl([
      'req',
      '-x509',
      '-config',
      p('min.cnf'),
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      p('server.key'),
      '-out',
      p('server.crt'),
      '-days',
      '2',
      '-subj',
      '/CN=simulator',
      '-CA',
      p('ca.crt'),
      '-CAkey',
      p('ca.key'),
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '-addext',
      'basicConstraints=critical,CA:FALSE',
      '-addext',
      'extendedKeyUsage=serverAuth',
    ]);
    const [caPem, certPem, keyPem] = await Promise.all(
      ['ca.crt', 'server.crt', 'server.key'].map((f) => readFile(p(f), 'utf8')),
    );
    return { caPem, certPem, keyPem };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export interface TlsFront {
  port: number;
  close(): Promise<void>;
}

/** Terminates TLS on a free port and pipes the plaintext to `targetPort` (the simulator). */
export async function startTlsFront(
  pki: PrivatePki,
  listenPort = 0,
): Promise<TlsFront & { setTarget(port: number): void }> {
  let targetPort = 0;
  const sockets = new Set<Socket>();
  const server = createTlsServer({ cert: pki.certPem, key: pki.keyPem }, (tls: TLSSocket) => {
    sockets.add(tls);
    tls.on('close', () => sockets.delete(tls));
    tls.on('error', () => undefined);
    const upstream = tcpConnect(targetPort, '127.0.0.1');
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    upstream.on('error', () => tls.destroy());
    tls.pipe(upstream);
    upstream.pipe(tls);
  });
  // A client that refuses our certificate aborts the handshake; that is expected here.
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((r) => server.listen(listenPort, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    setTarget: (p) => {
      targetPort = p;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
