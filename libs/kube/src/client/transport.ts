import * as http from 'node:http';
import * as https from 'node:https';
import type { Registry } from 'prom-client';
import type { KubeConfigSource } from './kubeconfig';
import { KubeTransportError, type RequestContext } from './errors';
import { checkKubeConfig } from './kubeconfig-check';
import { type RequestResultRecorder, restClientRequests } from './metrics';
import { resettableAgent } from './resettable-agent';

export interface TransportOptions {
  requestTimeoutMs: number;
  userAgent: string;
  /** Where rest_client_requests_total is counted. */
  registry: Registry;
}

export interface HttpResponse {
  statusCode: number;
  body: string;
  /** The Retry-After header, when the server sent one (API priority and fairness does with its 429s). */
  retryAfter?: string;
}

export interface RequestSpec {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path with query string. */
  path: string;
  body?: unknown;
  contentType?: string;
  ctx: RequestContext;
  /** Aborting fails the request with a KubeTransportError at once (used to stop an informer mid-list). */
  signal?: AbortSignal;
}

/**
 * HTTP to the API server with the server, TLS and credentials of a client-node KubeConfig. Credentials
 * are applied on every request because they can change under a running process (a projected service
 * account token is rotated on disk; exec plugins hand out short-lived tokens); the TLS material goes
 * into the request options so one keep-alive agent serves every call.
 */
export class HttpTransport {
  private readonly server: URL;
  private readonly agent: http.Agent;
  private readonly resetAll: () => number;
  private readonly viaProxy: boolean;
  private readonly recordResult: RequestResultRecorder;

  constructor(
    private readonly kubeConfig: KubeConfigSource,
    private readonly opts: TransportOptions,
  ) {
    // Fails at once, naming what to change, rather than at every request for two minutes.
    checkKubeConfig(kubeConfig);
    const cluster = kubeConfig.getCurrentCluster()!;
    this.server = new URL(cluster.server);
    this.viaProxy = Boolean(cluster.proxyUrl);
    this.recordResult = restClientRequests(opts.registry, this.server);
    const { agent, resetAll } = resettableAgent(this.server.protocol);
    this.agent = agent;
    this.resetAll = resetAll;
  }

  /** Closes idle keep-alive sockets so a process (or a test) can exit. */
  close(): void {
    this.agent.destroy();
  }

  /**
   * Ends every connection at once with a TCP reset, requests in flight and watches too: what the kernel
   * has not delivered yet is dropped rather than sent when the network comes back. Returns how many
   * connections were reset. The transport stays usable: the next request opens a new connection.
   */
  resetConnections(): number {
    return this.resetAll();
  }

  private async requestOptions(spec: RequestSpec): Promise<https.RequestOptions> {
    const opts: https.RequestOptions = {};
    try {
      await this.kubeConfig.applyToHTTPSOptions(opts);
    } catch (err) {
      // An exec plugin or token file that fails leaves the call without credentials; say which call.
      const reason = `could not apply the kubeconfig's TLS and credentials: ${err instanceof Error ? err.message : String(err)}`;
      throw new KubeTransportError(spec.ctx, reason, { cause: err });
    }
    const headers: http.OutgoingHttpHeaders = {
      ...(opts.headers as http.OutgoingHttpHeaders | undefined),
      Accept: 'application/json',
      'User-Agent': this.opts.userAgent,
    };
    if (spec.body !== undefined) headers['Content-Type'] = spec.contentType ?? 'application/json';
    const basePath = this.server.pathname.replace(/\/+$/, '');
    return {
      ...opts,
      // client-node builds a fresh agent per call; keep it only when it is the one that knows the proxy.
      agent: this.viaProxy ? opts.agent : this.agent,
      protocol: this.server.protocol,
      hostname: this.server.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: this.server.port || undefined,
      method: spec.method,
      path: basePath + spec.path,
      headers,
    };
  }

  /** Sends one request, counting it once: by its status when the head arrives, else as an error. */
  private send(opts: https.RequestOptions): http.ClientRequest {
    const req = this.server.protocol === 'https:' ? https.request(opts) : http.request(opts);
    const method = opts.method ?? 'GET';
    let counted = false;
    req.once('response', (res) => {
      counted = true;
      this.recordResult(res.statusCode, method);
    });
    req.once('error', () => {
      if (!counted) this.recordResult(undefined, method);
      counted = true;
    });
    return req;
  }

  /** One request, bounded as a whole by the request timeout; any HTTP status resolves. */
  async request(spec: RequestSpec): Promise<HttpResponse> {
    const opts = await this.requestOptions(spec);
    const payload = spec.body === undefined ? undefined : JSON.stringify(spec.body);
    if (payload !== undefined) {
      // Node frames a DELETE body with neither Content-Length nor chunked encoding (DELETE is not chunked
      // by default), so the server reads the body as the start of the next request on the keep-alive
      // socket and answers that one 400 Bad Request. Framing every body explicitly avoids it.
      (opts.headers as http.OutgoingHttpHeaders)['Content-Length'] = Buffer.byteLength(payload);
    }
    return new Promise<HttpResponse>((resolve, reject) => {
      const req = this.send(opts);
      // Not a schedule: a deadline on one request.
      const timer = setTimeout(
        () => req.destroy(new Error(`no answer within ${this.opts.requestTimeoutMs} ms`)),
        this.opts.requestTimeoutMs,
      );
      const onAbort = () => req.destroy(new Error('aborted by the caller'));
      const fail = (err: Error) => {
        clearTimeout(timer);
        spec.signal?.removeEventListener('abort', onAbort);
        reject(new KubeTransportError(spec.ctx, err.message, { cause: err }));
      };
      req.on('error', fail);
      if (spec.signal?.aborted) onAbort();
      else spec.signal?.addEventListener('abort', onAbort, { once: true });
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', fail);
        res.on('close', () => {
          // A body cut short may end in 'close' alone; without this the call would never settle.
          if (!res.complete) fail(new Error('the connection closed before the whole answer arrived'));
        });
        res.on('end', () => {
          clearTimeout(timer);
          spec.signal?.removeEventListener('abort', onAbort);
          resolve({
            statusCode: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
            retryAfter: res.headers['retry-after'],
          });
        });
      });
      req.end(payload);
    });
  }

  /**
   * A streaming GET. Resolves with the error response when the status is not 200; otherwise hands each
   * line of the body to `onLine` and resolves when the server ends the stream or `signal` aborts. The
   * request timeout bounds only the wait for the response head: a watch is meant to stay open.
   */
  async stream(
    spec: RequestSpec,
    signal: AbortSignal,
    onLine: (line: string) => void,
  ): Promise<HttpResponse | undefined> {
    const opts = await this.requestOptions(spec);
    // Checked after the await: an abort while credentials were applied would otherwise go unseen.
    if (signal.aborted) return undefined;
    return new Promise<HttpResponse | undefined>((resolve, reject) => {
      const req = this.send(opts);
      let settled = false;
      // `raw` errors come from the line handler (an ERROR event's KubeApiError) and pass through as they are.
      const finish = (result: HttpResponse | undefined, err?: Error, raw = false) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        if (err && raw) reject(err);
        else if (err && !signal.aborted)
          reject(new KubeTransportError(spec.ctx, err.message, { cause: err }));
        else resolve(result);
      };
      const onAbort = () => {
        req.destroy();
        finish(undefined);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      // Not a schedule: a deadline on one request.
      const timer = setTimeout(
        () => req.destroy(new Error(`no response head within ${this.opts.requestTimeoutMs} ms`)),
        this.opts.requestTimeoutMs,
      );
      req.on('error', (err) => finish(undefined, err));
      req.on('response', (res) => {
        clearTimeout(timer);
        if (res.statusCode !== 200) {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', (err) => finish(undefined, err));
          res.on('end', () =>
            finish({
              statusCode: res.statusCode ?? 0,
              body: Buffer.concat(chunks).toString('utf8'),
              retryAfter: res.headers['retry-after'],
            }),
          );
          return;
        }
        res.setEncoding('utf8');
        let pending = '';
        const deliver = (line: string) => {
          if (settled || line.trim() === '') return;
          try {
            onLine(line);
          } catch (err) {
            req.destroy();
            finish(undefined, err instanceof Error ? err : new Error(String(err)), true);
          }
        };
        res.on('data', (chunk: string) => {
          pending += chunk;
          let nl: number;
          while (!settled && (nl = pending.indexOf('\n')) >= 0) {
            deliver(pending.slice(0, nl));
            pending = pending.slice(nl + 1);
          }
        });
        res.on('error', (err) => finish(undefined, err));
        res.on('end', () => {
          deliver(pending);
          finish(undefined);
        });
        res.on('close', () => {
          // 'close' without 'end' is a cut connection, not the server finishing the stream.
          if (!res.complete) finish(undefined, new Error('the watch connection was cut'));
        });
      });
      req.end();
    });
  }
}
