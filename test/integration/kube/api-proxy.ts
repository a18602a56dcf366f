import * as http from 'node:http';
import * as https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';

/**
 * What the proxy does with the requests it gets:
 * - `forward`: passes them to the API server and streams the answers back;
 * - `silent-watches`: forwards everything but watches, which get a 200 head and then nothing, like a
 *   connection that stopped carrying data without closing;
 * - `blackhole`: accepts every request and never answers.
 */
export type ProxyMode = 'forward' | 'silent-watches' | 'blackhole';

/**
 * A plain-HTTP reverse proxy in front of the test API server that a test can misdirect: hold watches
 * silent, or cut every connection and refuse new ones (`down()`/`up()`, the API server unreachable).
 * Clients reach it through `kubeConfig()`; it authenticates upstream with the admin credentials.
 */
export class ApiProxy {
  mode: ProxyMode = 'forward';
  /** Requests seen, as `METHOD path?query`, for assertions on what the client sent. */
  readonly requests: string[] = [];
  private server = http.createServer((req, res) => void this.handle(req, res));
  private sockets = new Set<Socket>();
  private held = new Set<http.ServerResponse>();
  private port = 0;

  constructor(private readonly upstream: KubeConfig) {
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  /** Cuts every open connection and stops listening: connections are refused until `up()`. */
  async down(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const s of this.sockets) s.destroy();
    this.held.clear();
    await closed;
  }

  /** Listens again on the same port. */
  async up(): Promise<void> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await this.start();
  }

  async close(): Promise<void> {
    if (this.server.listening) await this.down();
  }

  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromClusterAndUser(
      { name: 'proxy', server: `http://127.0.0.1:${this.port}`, skipTLSVerify: true },
      { name: 'anonymous' },
    );
    return kc;
  }

  watchRequests(): string[] {
    return this.requests.filter((r) => r.includes('watch=true'));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://proxy');
    const isWatch = url.searchParams.get('watch') === 'true';
    this.requests.push(`${req.method} ${url.pathname}${url.search}`);
    if (this.mode === 'blackhole' || (this.mode === 'silent-watches' && isWatch)) {
      if (this.mode === 'silent-watches') {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.flushHeaders();
      }
      this.held.add(res);
      return;
    }
    const server = new URL(this.upstream.getCurrentCluster()!.server);
    const opts: https.RequestOptions = {};
    await this.upstream.applyToHTTPSOptions(opts);
    const headers = { ...req.headers, ...(opts.headers as http.OutgoingHttpHeaders) };
    delete headers.host;
    const upstreamReq = https.request({
      ...opts,
      hostname: server.hostname,
      port: server.port,
      method: req.method,
      path: url.pathname + url.search,
      headers,
    });
    upstreamReq.on('response', (upstreamRes) => {
      res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.headers);
      res.flushHeaders();
      upstreamRes.pipe(res);
    });
    upstreamReq.on('error', () => res.destroy());
    res.on('close', () => upstreamReq.destroy());
    req.pipe(upstreamReq);
  }
}
