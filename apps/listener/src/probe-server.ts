import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { Logger } from '@aro/observability/lean';
import type { ServeAddress } from './config';

/** One probe's verdict: `details` goes into the JSON body either way. */
export interface ProbeResult {
  up: boolean;
  details: Record<string, unknown>;
}

/** What the probes ask of the listener(s) the process runs. */
export interface ProbeSource {
  /** /healthz: false only for what a restart cures (a loop stuck on a call that never returns). */
  liveness(): ProbeResult;
  /** /readyz: the process is receiving its scale sets' jobs. */
  readiness(): ProbeResult;
}

/**
 * /metrics (at `metrics_endpoint`), /healthz and /readyz on `node:http`. Three fixed routes do not need
 * Express and Terminus, which together with their dependencies cost the listener ~10 MiB of RSS and
 * ~150 modules to load (docs/performance.md); the bodies keep Terminus's shape (`status`, `info` or
 * `error`) so a probe or a person reading them sees what they saw before.
 */
export class ProbeServer {
  private server: Server | undefined;

  constructor(
    private readonly o: {
      registry: Registry;
      metricsEndpoint: string;
      probes: ProbeSource;
      logger: Logger;
    },
  ) {}

  /** Listens; resolves with the port (the one the OS chose for port 0). */
  async listen(address: ServeAddress): Promise<number> {
    const server = createServer((req, res) => this.handle(req, res));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(address.port, address.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    return (server.address() as AddressInfo).port;
  }

  close(): Promise<void> {
    const server = this.server;
    if (!server) return Promise.resolve();
    this.server = undefined;
    return new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return this.send(res, 405, 'text/plain', 'method not allowed\n');
    if (path === this.o.metricsEndpoint) {
      this.o.registry.metrics().then(
        (body) => this.send(res, 200, this.o.registry.contentType, body),
        (err: unknown) => {
          this.o.logger.error('Serving metrics failed', err);
          this.send(res, 500, 'text/plain', `${String(err)}\n`);
        },
      );
      return;
    }
    if (path === '/healthz') return this.probe(res, 'pollLoop', this.o.probes.liveness());
    if (path === '/readyz') return this.probe(res, 'messageSession', this.o.probes.readiness());
    this.send(res, 404, 'text/plain', 'not found\n');
  }

  private probe(res: ServerResponse, name: string, result: ProbeResult): void {
    const indicator = { [name]: { status: result.up ? 'up' : 'down', ...result.details } };
    const body = result.up
      ? { status: 'ok', info: indicator, error: {}, details: indicator }
      : { status: 'error', info: {}, error: indicator, details: indicator };
    this.send(res, result.up ? 200 : 503, 'application/json; charset=utf-8', JSON.stringify(body));
  }

  private send(res: ServerResponse, status: number, contentType: string, body: string): void {
    res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
    res.end(body);
  }
}
