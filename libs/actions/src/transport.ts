import { request as httpRequest, type ClientRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { TLSSocket } from 'node:tls';
import type { Logger } from '@aro/observability/lean';
import { Dispatchers } from './dispatchers';
import { ActionsError, ActionsErrorKind, redactUrl } from './errors';
import { ActionsMetrics } from './metrics';
import { connectTimeoutCode, errorCodeOf, hasTlsFailureCode, proxyTunnelErrorOf } from './error-codes';
import { Repeatability, TransportFailure, ResolvedRetryOptions, retryDecision } from './retry';

export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'DELETE';

export interface TransportRequest {
  method: HttpMethod;
  url: URL;
  /** The metrics label: a template such as `DELETE agents/{id}`. */
  route: string;
  headers: Record<string, string>;
  body?: string;
  repeat: Repeatability;
  /** Statuses retried for this call in addition to the usual ones (runner-registration: 401, 403). */
  extraRetryStatuses?: readonly number[];
  /** Per attempt; overrides the transport default (the message long poll needs longer). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface TransportResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  attempts: number;
}

export interface TransportOptions {
  dispatchers: Dispatchers;
  userAgent: string;
  timeoutMs: number;
  retry: ResolvedRetryOptions;
  metrics: ActionsMetrics;
  logger: Logger;
  /** Seams for unit tests: how to wait between attempts, and the jitter source. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
}

function flattenHeaders(h: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) {
    if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

/**
 * Sends one logical request: a bounded attempt loop with a timeout on each attempt, retries by the
 * policy in retry.ts, and a metric per attempt. It returns whatever response the last attempt got
 * (the caller decides which statuses are success) and throws only when no response came back.
 */
export class HttpTransport {
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  private readonly random: () => number;
  private readonly inFlight = new Set<ClientRequest>();
  private closed = false;

  constructor(private readonly o: TransportOptions) {
    // Not a schedule: the wait between one request's attempts (backoff, Retry-After).
    this.sleep = o.sleep ?? ((ms, signal) => sleep(ms, undefined, { signal }));
    this.random = o.random ?? Math.random;
  }

  async send(req: TransportRequest): Promise<TransportResponse> {
    const { retry, metrics } = this.o;
    const labels = { route: req.route, method: req.method };
    for (let attempt = 1; ; attempt++) {
      req.signal?.throwIfAborted();
      const started = process.hrtime.bigint();
      let outcome: { response: TransportResponse } | { error: unknown };
      try {
        outcome = { response: { ...(await this.attempt(req)), attempts: attempt } };
      } catch (error) {
        outcome = { error };
      }
      metrics.duration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);

      if ('response' in outcome) {
        const { response } = outcome;
        metrics.requests.inc({ ...labels, code: String(response.status) });
        const decision = retryDecision(
          { status: response.status, retryAfter: response.headers['retry-after'] },
          req,
          attempt - 1,
          retry,
          this.random,
        );
        if (!decision.retry) return response;
        const { waitMs } = decision;
        this.o.logger.debug('Retrying a request after a retryable status', {
          route: req.route,
          status: response.status,
          attempt,
          waitMs,
        });
        metrics.retries.inc(labels);
        await this.sleep(waitMs, req.signal);
        continue;
      }

      const { error } = outcome;
      metrics.requests.inc({ ...labels, code: 'error' });
      if (req.signal?.aborted) throw req.signal.reason;
      const decision = retryDecision({ error }, req, attempt - 1, retry, this.random);
      if (!decision.retry) throw this.transportError(req, error, attempt, decision.failure ?? 'maybe-sent');
      const { waitMs } = decision;
      this.o.logger.debug('Retrying a request after a connection failure', {
        route: req.route,
        error: describe(error),
        attempt,
        waitMs,
      });
      metrics.retries.inc(labels);
      await this.sleep(waitMs, req.signal);
    }
  }

  /**
   * Lets requests in flight finish for a while (5 s), then cuts them off and closes the pooled
   * connections, so that shutdown is bounded; later calls fail.
   */
  async close(graceMs = 5000): Promise<void> {
    this.closed = true;
    const deadline = Date.now() + graceMs;
    while (this.inFlight.size > 0 && Date.now() < deadline) await sleep(20);
    for (const request of this.inFlight) request.destroy();
    this.o.dispatchers.close();
  }

  private attempt(req: TransportRequest): Promise<Omit<TransportResponse, 'attempts'>> {
    if (this.closed) return Promise.reject(new Error('the Actions client was closed'));
    const timeoutMs = req.timeoutMs ?? this.o.timeoutMs;
    // The abort signal bounds the whole attempt: connecting, a proxy's CONNECT, TLS, the headers and
    // the body. Node's own timeouts are idle timeouts, which a trickle of bytes defeats.
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = req.signal ? AbortSignal.any([req.signal, timeout]) : timeout;
    const headers: Record<string, string> = { 'user-agent': this.o.userAgent, ...req.headers };
    if (req.body !== undefined) headers['content-length'] = String(Buffer.byteLength(req.body));
    const onTimeout = (e: unknown) => {
      if (timeout.aborted && !req.signal?.aborted) {
        throw Object.assign(new Error(`no complete response within ${timeoutMs} ms`), {
          code: 'ARO_REQUEST_TIMEOUT',
          cause: e,
        });
      }
      throw e;
    };
    return this.exchange(req, headers, signal).catch(onTimeout);
  }

  /** One request and its whole response, on Node's `http`/`https` with the URL's pooled agent. */
  private exchange(
    req: TransportRequest,
    headers: Record<string, string>,
    signal: AbortSignal,
  ): Promise<Omit<TransportResponse, 'attempts'>> {
    const { url } = req;
    return new Promise((resolve, reject) => {
      signal.throwIfAborted();
      const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
      const request = send(
        {
          protocol: url.protocol,
          hostname: url.hostname.replace(/^\[|\]$/g, ''),
          // Explicit: a proxy agent's default port is guessed from the call stack (agent-base).
          port: Number(url.port) || (url.protocol === 'https:' ? 443 : 80),
          path: `${url.pathname}${url.search}`,
          method: req.method,
          headers,
          agent: this.o.dispatchers.forUrl(url),
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.once('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: flattenHeaders(res.headers),
              body: Buffer.concat(chunks),
            }),
          );
          // A connection lost mid-body ('aborted'), or the attempt ended by its signal.
          res.once('error', reject);
          res.once('close', () => {
            if (!res.complete) reject(Object.assign(new Error('response cut short'), { code: 'ECONNRESET' }));
          });
        },
      );
      this.inFlight.add(request);
      request.once('close', () => this.inFlight.delete(request));
      // Node reports a request cancelled before it has a socket (a tunnel being opened) only once a
      // socket arrives; the attempt ends at once here, and a socket that comes late is destroyed.
      const onAbort = () => {
        reject(signal.reason);
        request.destroy(signal.reason instanceof Error ? signal.reason : undefined);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      request.once('close', () => signal.removeEventListener('abort', onAbort));
      request.once('error', reject);
      armConnectTimeout(request, this.o.dispatchers.connectTimeoutMs);
      request.end(req.body);
    });
  }

  private transportError(
    req: TransportRequest,
    error: unknown,
    attempts: number,
    failure: TransportFailure,
  ): ActionsError {
    const why =
      failure === 'permanent'
        ? 'not retried'
        : failure === 'maybe-sent' && req.repeat === 'once'
          ? 'not retried, the request may have reached the server and must not be repeated'
          : `gave up after ${attempts} attempt(s)`;
    return new ActionsError({
      kind: transportErrorKind(error, failure, this.o.dispatchers.viaProxy(req.url)),
      method: req.method,
      url: redactUrl(req.url),
      detail: `${describe(error)} (${why})`,
      cause: error,
    });
  }
}

/**
 * What a request that got no response failed on, from where it failed: a TLS error code, the proxy
 * client's own ProxyTunnelError, or a connection that never opened on a route through a proxy (where
 * the proxy is the only peer the client connects to).
 */
export function transportErrorKind(
  error: unknown,
  failure: TransportFailure,
  viaProxy: boolean,
): ActionsErrorKind {
  if (hasTlsFailureCode(error)) return 'TlsFailure';
  if (proxyTunnelErrorOf(error) || (viaProxy && failure === 'not-sent')) return 'ProxyFailure';
  return 'Other';
}

/**
 * Fails a request whose connection (TCP, and TLS for https) is not up within `ms`: such a request was
 * certainly not sent, so even a call that must not repeat may be retried (see retry.ts). A reused
 * keep-alive socket is already connected; a tunnel has its own deadline until it is open.
 */
function armConnectTimeout(request: ClientRequest, ms: number): void {
  request.once('socket', (socket: Socket) => {
    if (request.reusedSocket) return;
    const tls = socket instanceof TLSSocket;
    if (!tls && !socket.connecting) return;
    const timer = setTimeout(() => {
      request.destroy(
        Object.assign(new Error(`connection not established within ${ms} ms`), { code: connectTimeoutCode }),
      );
    }, ms);
    const done = () => clearTimeout(timer);
    socket.once(tls ? 'secureConnect' : 'connect', done);
    request.once('close', done);
  });
}

function describe(e: unknown): string {
  const code = errorCodeOf(e);
  const message = e instanceof Error ? e.message : String(e);
  return code && !message.includes(code) ? `${code}: ${message}` : message;
}
