import { createLogger, Logger, metricsRegistry } from '@aro/observability/lean';
import { Registry } from 'prom-client';
import { AdminTokenSource, GitHubCredentials } from './auth';
import { GitHubConfig, parseGitHubConfigUrl } from './config-url';
import { createDispatchers, ProxySettings } from './dispatchers';
import { ActionsError, errorFromResponse, redactUrl, stripBom } from './errors';
import { ActionsMetrics } from './metrics';
import { Repeatability, RetryOptions, resolveRetryOptions } from './retry';
import { HttpMethod, HttpTransport, TransportResponse } from './transport';
import { userAgentFor } from './user-agent';

/*
 * How a call reaches the Actions service: the admin token (one re-authentication when refused), the
 * URL as the Go client builds it, and the answer parsed into a typed error or JSON. The calls
 * themselves are grouped by concern on top of it: runners (runner-calls.ts), runner groups and
 * scale sets (scale-set-calls.ts), and the listener's sessions, messages and jobs (client.ts).
 */

export interface ActionsClientOptions {
  configUrl: string;
  credentials: GitHubCredentials;
  /** This client's proxy; when absent, HTTP(S)_PROXY and NO_PROXY from the environment apply. */
  proxy?: ProxySettings;
  /** Extra PEM root certificates (a GHES private CA), trusted in addition to Node's bundled roots. */
  rootCAs?: string[];
  /** Which part of ARO is calling (`controller`, `listener`); appended to the ARO User-Agent. */
  userAgent?: string;
  /** Per-attempt timeout of every call but the message long poll. Default 30 s. */
  requestTimeoutMs?: number;
  /** Per-attempt timeout of getMessage, which the service holds open up to ~50 s. Default 90 s. */
  longPollTimeoutMs?: number;
  retry?: RetryOptions;
  /** Renew the admin token once it is this close to expiry. Default 60 s, as the Go client. */
  adminTokenRefreshMarginMs?: number;
  logger?: Logger;
  registry?: Registry;
}

export interface CallOptions {
  signal?: AbortSignal;
}

interface ListEnvelope<T> {
  count?: number;
  value?: T[];
}

export const apiVersion = '6.0-preview';
export const scaleSetsPath = '_apis/runtime/runnerscalesets';

export interface ServiceCall {
  method: HttpMethod;
  /** Relative to the Actions service URL, query allowed. */
  path: string;
  route: string;
  query?: Record<string, string>;
  body?: unknown;
  expect: readonly number[];
  repeat: Repeatability;
  signal?: AbortSignal;
}

export interface ParsedResponse {
  status: number;
  json: unknown;
  url: string;
  method: string;
  activityId?: string;
}

/** An answer of the expected status whose body is not what the call expects. */
export function malformed(res: ParsedResponse, detail: string): ActionsError {
  const { method, url, status: statusCode, activityId } = res;
  return new ActionsError({ kind: 'Other', method, url, statusCode, activityId, detail });
}

/** The plumbing every Actions service call shares; see {@link ActionsServiceClient} for the calls. */
export class ActionsServiceCalls {
  readonly config: GitHubConfig;
  protected readonly transport: HttpTransport;
  protected readonly tokens: AdminTokenSource;
  protected readonly longPollTimeoutMs: number;
  protected readonly logger: Logger;

  constructor(opts: ActionsClientOptions) {
    this.config = parseGitHubConfigUrl(opts.configUrl);
    this.logger = (opts.logger ?? createLogger()).child({
      component: 'actions-client',
      configUrl: this.config.configUrl.href,
    });
    const metrics = new ActionsMetrics(opts.registry ?? metricsRegistry());
    const retry = resolveRetryOptions(opts.retry);
    const requestTimeoutMs = opts.requestTimeoutMs ?? 30_000;
    this.longPollTimeoutMs = opts.longPollTimeoutMs ?? 90_000;
    this.transport = new HttpTransport({
      dispatchers: createDispatchers({
        proxy: opts.proxy,
        rootCAs: opts.rootCAs,
        connectTimeoutMs: Math.min(10_000, requestTimeoutMs),
        tunnelTimeoutMs: requestTimeoutMs,
      }),
      userAgent: userAgentFor(opts.userAgent),
      timeoutMs: requestTimeoutMs,
      retry,
      metrics,
      logger: this.logger,
    });
    this.tokens = new AdminTokenSource({
      config: this.config,
      credentials: opts.credentials,
      transport: this.transport,
      metrics,
      logger: this.logger,
      refreshMarginMs: opts.adminTokenRefreshMarginMs,
    });
  }

  /** Closes the connection pools; calls made afterwards fail. */
  close(): Promise<void> {
    return this.transport.close();
  }

  /** A read that may be repeated: GET, answered 200. */
  protected read(
    path: string,
    route: string,
    opts: CallOptions,
    query?: Record<string, string>,
  ): Promise<ParsedResponse> {
    return this.call({
      method: 'GET',
      path,
      route,
      query,
      expect: [200],
      repeat: 'idempotent',
      signal: opts.signal,
    });
  }

  /** A write answered 200 with what it made; `repeat` says whether sending it twice is harmless. */
  protected write(
    method: 'POST' | 'PATCH',
    path: string,
    route: string,
    body: unknown,
    repeat: Repeatability,
    opts: CallOptions,
  ): Promise<ParsedResponse> {
    return this.call({ method, path, route, body, expect: [200], repeat, signal: opts.signal });
  }

  /** A deletion, answered 204; repeating it deletes nothing more. */
  protected async remove(path: string, route: string, opts: CallOptions): Promise<void> {
    await this.call({
      method: 'DELETE',
      path,
      route,
      expect: [204],
      repeat: 'idempotent',
      signal: opts.signal,
    });
  }

  /** An admin-token call to the Actions service, with one re-authentication if the token is refused. */
  protected async call(c: ServiceCall): Promise<ParsedResponse> {
    for (let reauthenticated = false; ; reauthenticated = true) {
      const conn = await this.tokens.get(c.signal);
      const url = this.serviceUrl(conn.actionsUrl, c.path, c.query);
      const res = await this.transport.send({
        method: c.method,
        url,
        route: c.route,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          authorization: `Bearer ${conn.token}`,
        },
        body: c.body === undefined ? undefined : JSON.stringify(c.body),
        repeat: c.repeat,
        signal: c.signal,
      });
      // A 401 means the service did not act, so even a call that must not repeat can be sent again
      // with a fresh token. It happens when the token was revoked or the service lost its sessions.
      if (res.status === 401 && !reauthenticated) {
        this.logger.info('The Actions service refused the admin token; obtaining a new one', {
          route: c.route,
        });
        this.tokens.invalidate(conn.token);
        continue;
      }
      return this.parse(res, url, c.method, c.expect, false);
    }
  }

  /** `url.JoinPath(base, path)` plus `api-version`, as the Go client builds Actions service URLs. */
  protected serviceUrl(base: URL, path: string, query?: Record<string, string>): URL {
    const [p, q] = path.split('?', 2);
    const url = new URL(base.href);
    const joined = `${url.pathname.replace(/\/+$/, '')}/${p.replace(/^\/+/, '')}`;
    // Clean duplicate slashes but keep a trailing one, which the runner-groups route has on the wire.
    url.pathname = joined.replace(/\/{2,}/g, '/');
    const params = new URLSearchParams(q ?? '');
    for (const [k, v] of Object.entries(query ?? {})) params.set(k, v);
    if (!params.has('api-version')) params.set('api-version', apiVersion);
    for (const [k, v] of url.searchParams) if (!params.has(k)) params.set(k, v);
    params.sort();
    url.search = params.toString();
    return url;
  }

  protected parse(
    res: TransportResponse,
    url: URL,
    method: string,
    expect: readonly number[],
    onMessageQueue: boolean,
  ): ParsedResponse {
    const safeUrl = redactUrl(url);
    const activityId = res.headers['activityid'];
    if (!expect.includes(res.status)) {
      const err = errorFromResponse({
        method,
        url: safeUrl,
        statusCode: res.status,
        contentType: res.headers['content-type'],
        activityId,
        requestId: res.headers['x-github-request-id'],
        body: res.body,
        onMessageQueue,
      });
      if (res.attempts > 1) err.message += ` (after ${res.attempts} attempts)`;
      throw err;
    }
    const text = stripBom(res.body).toString('utf8');
    let json: unknown;
    if (text.trim() !== '') {
      try {
        json = JSON.parse(text);
      } catch (e) {
        throw new ActionsError({
          kind: 'Other',
          method,
          url: safeUrl,
          statusCode: res.status,
          activityId,
          detail: `response is not JSON: ${(e as Error).message}`,
        });
      }
    }
    return { status: res.status, json, url: safeUrl, method, activityId };
  }

  protected list<T>(res: ParsedResponse): T[] {
    const env = res.json as ListEnvelope<T> | undefined;
    if (!env || !Array.isArray(env.value)) {
      throw malformed(res, 'response is not a {count, value} list');
    }
    return env.value;
  }

  protected atMostOne<T>(res: ParsedResponse, what: string): T | undefined {
    const items = this.list<T>(res);
    if (items.length > 1) {
      throw malformed(res, `expected at most one of the ${what}, the service returned ${items.length}`);
    }
    return items[0];
  }
}
