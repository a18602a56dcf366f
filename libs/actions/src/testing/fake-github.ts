import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo, createServer as createTcpServer, Server as TcpServer, Socket } from 'node:net';

/**
 * A scripted GitHub + Actions origin on node:http for the unit specs of this lib: it answers the
 * three authentication calls itself and hands every other request to a per-test handler, recording
 * what arrived. The contract tests under test/integration/actions run against the real simulator.
 */
export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: string;
  /** The client's port: requests with the same one came over the same connection. */
  clientPort: number;
}

export type FakeAnswer =
  { status: number; body?: unknown; headers?: Record<string, string>; raw?: Buffer } | 'drop' | 'hang';

export type FakeHandler = (req: RecordedRequest) => FakeAnswer | Promise<FakeAnswer>;

/** A path the server answers itself with 204 and does not record: see `caughtUp`. */
const CAUGHT_UP_PATH = '/_fake/caught-up';

export function adminJwt(expSeconds: number): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${part({ alg: 'none', typ: 'JWT' })}.${part({ exp: expSeconds, iss: 'fake' })}.c2ln`;
}

export class FakeGitHub {
  readonly requests: RecordedRequest[] = [];
  handler: FakeHandler = () => ({
    status: 404,
    body: { typeName: 'NotFoundException', message: 'no handler' },
  });
  /** Lifetime of the admin tokens runner-registration hands out. */
  adminTokenLifetimeS = 3600;
  /** Answer runner-registration with this status this many times first. */
  registrationFailures: { status: number; times: number } = { status: 401, times: 0 };
  private adminTokenSerial = 0;
  private readonly sockets = new Set<Socket>();
  private hanging: ServerResponse[] = [];

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<FakeGitHub> {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    const fake = new FakeGitHub(server, `http://127.0.0.1:${port}`);
    server.on('connection', (s) => {
      fake.sockets.add(s);
      s.on('close', () => fake.sockets.delete(s));
    });
    server.on('request', (req, res) => void fake.handle(req, res));
    return fake;
  }

  count(method: string, pathSuffix: string): number {
    return this.requests.filter((r) => r.method === method && r.path.endsWith(pathSuffix)).length;
  }

  /**
   * Resolves once the server has answered a request sent now. A client's timeout is a timer and this
   * server's accept is I/O in the same process: after the event loop stalls (a loaded machine), Node
   * runs the timers first, so a client can give up before the server has read a request it already
   * wrote. A request sent after the client gave up and answered here is evidence the server had its
   * turn for everything written before it, so `count` read afterwards is final. Not recorded, so it
   * changes no count.
   */
  async caughtUp(): Promise<void> {
    const res = await fetch(`${this.url}${CAUGHT_UP_PATH}`, { signal: AbortSignal.timeout(10_000) });
    await res.arrayBuffer();
    if (res.status !== 204) throw new Error(`the fake's caught-up marker answered ${res.status}`);
  }

  /** Admin tokens issued so far. */
  get adminTokensIssued(): number {
    return this.adminTokenSerial;
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const url = new URL(req.url ?? '/', this.url);
    if (url.pathname === CAUGHT_UP_PATH) {
      res.writeHead(204).end();
      return;
    }
    const rec: RecordedRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
      headers: req.headers,
      body: Buffer.concat(chunks).toString('utf8'),
      clientPort: req.socket.remotePort ?? 0,
    };
    this.requests.push(rec);
    let answer: FakeAnswer;
    if (rec.path.endsWith('/actions/runners/registration-token')) {
      answer = {
        status: 201,
        body: { token: 'registration-token', expires_at: new Date(Date.now() + 3600e3).toISOString() },
      };
    } else if (rec.path === '/api/v3/actions/runner-registration') {
      if (this.registrationFailures.times > 0) {
        this.registrationFailures.times--;
        answer = { status: this.registrationFailures.status, body: { message: 'not yet' } };
      } else {
        this.adminTokenSerial++;
        const exp = Math.floor(Date.now() / 1000) + this.adminTokenLifetimeS;
        answer = {
          status: 201,
          body: { url: `${this.url}/tenant/1/`, token: adminJwt(exp) + this.adminTokenSerial },
        };
      }
    } else {
      answer = await this.handler(rec);
    }
    if (answer === 'drop') {
      req.socket.destroy();
      return;
    }
    if (answer === 'hang') {
      this.hanging.push(res);
      return;
    }
    const body =
      answer.raw ?? (answer.body === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(answer.body)));
    res.writeHead(answer.status, {
      'content-type': 'application/json',
      'content-length': String(body.length),
      activityid: `activity-${this.requests.length}`,
      ...answer.headers,
    });
    res.end(body);
  }
}

/** A TCP server that accepts connections and never answers: a proxy that ignores CONNECT. */
export async function startSilentProxy(): Promise<{
  url: string;
  connections: () => number;
  /** Connections still open (the client has not closed them). */
  open: () => number;
  close: () => Promise<void>;
}> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server: TcpServer = createTcpServer((s) => {
    accepted++;
    sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
    // Reads (and ignores) what the client sends, so that a client closing the connection is seen.
    s.resume();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    connections: () => accepted,
    open: () => sockets.size,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
