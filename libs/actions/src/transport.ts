import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '@aro/observability/lean';
import { Dispatchers } from './dispatchers';
import { ActionsError, ActionsErrorKind, redactUrl } from './errors';
import { ActionsMetrics } from './metrics';
import { errorCodeOf, hasTlsFailureCode, proxyTunnelErrorOf } from './error-codes';
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

function flattenHeaders(h: Record<string, string | string[] | undefined>): Record<string, string> {
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

  close(): Promise<void> {
    return this.o.dispatchers.close();
  }

  private async attempt(req: TransportRequest): Promise<Omit<TransportResponse, 'attempts'>> {
    const timeoutMs = req.timeoutMs ?? this.o.timeoutMs;
    // The abort signal bounds the whole attempt, connecting and a proxy's CONNECT included, which
    // undici's headers/body timeouts alone do not: a proxy that never answers CONNECT hangs forever.
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = req.signal ? AbortSignal.any([req.signal, timeout]) : timeout;
    const headers: Record<string, string> = { 'user-agent': this.o.userAgent, ...req.headers };
    try {
      // The dispatcher's own request (undici's top-level `request` is this plus URL parsing, and
      // comes with undici's whole index: see undici-parts.ts).
      const pending = this.o.dispatchers.forUrl(req.url).request({
        origin: req.url.origin,
        path: `${req.url.pathname}${req.url.search}`,
        method: req.method,
        headers,
        body: req.body,
        signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      // undici only honours the signal once a connection exists; until then (connecting, or a
      // proxy tunnel being set up) the attempt is ended here, and a late response is drained.
      const res = await untilAborted(pending, signal, (late) => void late.body.dump().catch(() => undefined));
      const body = Buffer.from(await res.body.arrayBuffer());
      return { status: res.statusCode, headers: flattenHeaders(res.headers), body };
    } catch (e) {
      if (timeout.aborted && !req.signal?.aborted) {
        throw Object.assign(new Error(`no complete response within ${timeoutMs} ms`), {
          code: 'ARO_REQUEST_TIMEOUT',
          cause: e,
        });
      }
      throw e;
    }
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

function untilAborted<T>(p: Promise<T>, signal: AbortSignal, onLate: (v: T) => void): Promise<T> {
  if (signal.aborted) {
    p.then(onLate, () => undefined);
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const onAbort = () => {
      settled = true;
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        if (settled) onLate(v);
        else resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        if (!settled) reject(e);
      },
    );
  });
}

function describe(e: unknown): string {
  const code = errorCodeOf(e);
  const message = e instanceof Error ? e.message : String(e);
  return code && !message.includes(code) ? `${code}: ${message}` : message;
}
