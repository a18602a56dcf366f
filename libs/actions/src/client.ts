import { createLogger, Logger, metricsRegistry } from '@aro/observability/lean';
import { Registry } from 'prom-client';
import { AdminTokenSource, GitHubCredentials } from './auth';
import { GitHubConfig, parseGitHubConfigUrl } from './config-url';
import { createDispatchers, ProxySettings } from './dispatchers';
import { ActionsError, errorFromResponse, redactUrl, stripBom } from './errors';
import { ActionsMetrics } from './metrics';
import { Repeatability, RetryOptions, resolveRetryOptions } from './retry';
import { HttpMethod, HttpTransport, TransportResponse } from './transport';
import {
  AcquirableJob,
  fromWireScaleSet,
  RunnerGroup,
  RunnerReference,
  RunnerScaleSet,
  RunnerScaleSetCreate,
  RunnerScaleSetJitRunnerConfig,
  RunnerScaleSetMessage,
  RunnerScaleSetSession,
  RunnerScaleSetUpdate,
  toWireCreate,
  toWireUpdate,
  WireRunnerScaleSet,
} from './types';
import { userAgentFor } from './user-agent';

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

const apiVersion = '6.0-preview';
const scaleSetsPath = '_apis/runtime/runnerscalesets';
const agentsPath = '_apis/distributedtask/pools/0/agents';
const runnerGroupsPath = '_apis/runtime/runnergroups/';
const zeroSessionId = '00000000-0000-0000-0000-000000000000';

interface ServiceCall {
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

/**
 * A client of the Actions service for one config URL and one set of credentials: the scale-set
 * API the controllers use, and the message-queue API the listener uses. Safe to share: calls run
 * concurrently, and one admin token (refreshed single-flight) serves them all.
 */
export class ActionsServiceClient {
  readonly config: GitHubConfig;
  private readonly transport: HttpTransport;
  private readonly tokens: AdminTokenSource;
  private readonly longPollTimeoutMs: number;
  private readonly logger: Logger;

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

  // ---- runners ----

  async generateJitRunnerConfig(
    setting: { name: string; workFolder?: string },
    scaleSetId: number,
    opts: CallOptions = {},
  ): Promise<RunnerScaleSetJitRunnerConfig> {
    const res = await this.call({
      method: 'POST',
      path: `${scaleSetsPath}/${scaleSetId}/generatejitconfig`,
      route: 'POST runnerscalesets/{id}/generatejitconfig',
      body: { name: setting.name, workFolder: setting.workFolder ?? '' },
      expect: [200],
      repeat: 'once',
      signal: opts.signal,
    });
    return res.json as RunnerScaleSetJitRunnerConfig;
  }

  async getRunner(runnerId: number, opts: CallOptions = {}): Promise<RunnerReference> {
    const res = await this.call({
      method: 'GET',
      path: `${agentsPath}/${runnerId}`,
      route: 'GET agents/{id}',
      expect: [200],
      repeat: 'idempotent',
      signal: opts.signal,
    });
    return res.json as RunnerReference;
  }

  async getRunnerByName(name: string, opts: CallOptions = {}): Promise<RunnerReference | undefined> {
    const res = await this.call({
      method: 'GET',
      path: agentsPath,
      route: 'GET agents?agentName',
      query: { agentName: name },
      expect: [200],
      repeat: 'idempotent',
      signal: opts.signal,
    });
    return this.atMostOne(res, `runners named ${JSON.stringify(name)}`);
  }

  async removeRunner(runnerId: number, opts: CallOptions = {}): Promise<void> {
    await this.call({
      method: 'DELETE',
      path: `${agentsPath}/${runnerId}`,
      route: 'DELETE agents/{id}',
      expect: [204],
      repeat: 'idempotent',
      signal: opts.signal,
    });
  }

  /** Every runner registered in the tenant, or those of one scale set. */
  async listRunners(scaleSetId?: number, opts: CallOptions = {}): Promise<RunnerReference[]> {
    const res = await this.call({
      method: 'GET',
      path: agentsPath,
      route: 'GET agents',
      expect: [200],
      repeat: 'idempotent',
      signal: opts.signal,
    });
    const runners = this.list<RunnerReference>(res);
    return scaleSetId === undefined ? runners : runners.filter((r) => r.runnerScaleSetId === scaleSetId);
  }

  // ---- runner groups and scale sets ----

  async getRunnerGroupByName(name: string, opts: CallOptions = {}): Promise<RunnerGroup> {
    const res = await this.call({
      method: 'GET',
      path: runnerGroupsPath,
      route: 'GET runnergroups?groupName',
      query: { groupName: name },
      expect: [200],
      repeat: 'idempotent',
      signal: opts.signal,
    });
    const group = this.atMostOne<RunnerGroup>(res, `runner groups named ${JSON.stringify(name)}`);
    if (!group) {
      throw new ActionsError({
        kind: 'NotFound',
        method: 'GET',
        url: res.url,
        activityId: res.activityId,
        detail: `no runner group found with name ${JSON.stringify(name)}`,
      });
    }
    return group;
  }

  async getRunnerScaleSet(
    runnerGroupId: number,
    name: string,
    opts: CallOptions = {},
  ): Promise<RunnerScaleSet | undefined> {
    const res = await this.call({
      method: 'GET',
      path: scaleSetsPath,
      route: 'GET runnerscalesets?runnerGroupId&name',
      query: { runnerGroupId: String(runnerGroupId), name },
      expect: [200],
      repeat: 'idempotent',
      signal: opts.signal,
    });
    const found = this.atMostOne<WireRunnerScaleSet>(
      res,
      `scale sets named ${JSON.stringify(name)} in group ${runnerGroupId}`,
    );
    return found && fromWireScaleSet(found);
  }

  async getRunnerScaleSetById(id: number, opts: CallOptions = {}): Promise<RunnerScaleSet> {
    const res = await this.call({
      method: 'GET',
      path: `${scaleSetsPath}/${id}`,
      route: 'GET runnerscalesets/{id}',
      expect: [200],
      repeat: 'idempotent',
      signal: opts.signal,
    });
    return fromWireScaleSet(res.json as WireRunnerScaleSet);
  }

  async createRunnerScaleSet(rs: RunnerScaleSetCreate, opts: CallOptions = {}): Promise<RunnerScaleSet> {
    const res = await this.call({
      method: 'POST',
      path: scaleSetsPath,
      route: 'POST runnerscalesets',
      body: toWireCreate(rs),
      expect: [200],
      repeat: 'once',
      signal: opts.signal,
    });
    return fromWireScaleSet(res.json as WireRunnerScaleSet);
  }

  async updateRunnerScaleSet(
    id: number,
    update: RunnerScaleSetUpdate,
    opts: CallOptions = {},
  ): Promise<RunnerScaleSet> {
    const res = await this.call({
      method: 'PATCH',
      path: `${scaleSetsPath}/${id}`,
      route: 'PATCH runnerscalesets/{id}',
      body: toWireUpdate(update),
      expect: [200],
      // Setting the same fields twice leaves the same scale set.
      repeat: 'idempotent',
      signal: opts.signal,
    });
    return fromWireScaleSet(res.json as WireRunnerScaleSet);
  }

  async deleteRunnerScaleSet(id: number, opts: CallOptions = {}): Promise<void> {
    await this.call({
      method: 'DELETE',
      path: `${scaleSetsPath}/${id}`,
      route: 'DELETE runnerscalesets/{id}',
      expect: [204],
      repeat: 'idempotent',
      signal: opts.signal,
    });
  }

  // ---- message sessions (the listener) ----

  async createMessageSession(
    scaleSetId: number,
    owner: string,
    opts: CallOptions = {},
  ): Promise<RunnerScaleSetSession> {
    const res = await this.call({
      method: 'POST',
      path: `${scaleSetsPath}/${scaleSetId}/sessions`,
      route: 'POST runnerscalesets/{id}/sessions',
      body: { sessionId: zeroSessionId, ownerName: owner },
      expect: [200],
      // A repeat after the first reached the service would meet our own session: SessionConflict.
      repeat: 'once',
      signal: opts.signal,
    });
    return this.session(res);
  }

  async refreshMessageSession(
    scaleSetId: number,
    sessionId: string,
    opts: CallOptions = {},
  ): Promise<RunnerScaleSetSession> {
    const res = await this.call({
      method: 'PATCH',
      path: `${scaleSetsPath}/${scaleSetId}/sessions/${encodeURIComponent(sessionId)}`,
      route: 'PATCH runnerscalesets/{id}/sessions/{sessionId}',
      expect: [200],
      // A second refresh only rotates the queue token again; the response carries the newest one.
      repeat: 'idempotent',
      signal: opts.signal,
    });
    return this.session(res);
  }

  async deleteMessageSession(scaleSetId: number, sessionId: string, opts: CallOptions = {}): Promise<void> {
    await this.call({
      method: 'DELETE',
      path: `${scaleSetsPath}/${scaleSetId}/sessions/${encodeURIComponent(sessionId)}`,
      route: 'DELETE runnerscalesets/{id}/sessions/{sessionId}',
      expect: [204],
      repeat: 'idempotent',
      signal: opts.signal,
    });
  }

  /**
   * Long-polls the session's queue. Undefined when the service had nothing within its window (202).
   * Messages with ids up to `lastMessageId` count as processed; `maxCapacity` tells the service how
   * many runners the scale set can have, so it does not assign more jobs than that.
   * A 401 means the queue token expired or was rotated: ActionsError kind MessageQueueTokenExpired,
   * answered by refreshMessageSession and a new poll.
   */
  async getMessage(
    messageQueueUrl: string,
    queueToken: string,
    lastMessageId: number,
    maxCapacity: number,
    opts: CallOptions = {},
  ): Promise<RunnerScaleSetMessage | undefined> {
    if (!Number.isSafeInteger(maxCapacity) || maxCapacity < 0) {
      throw new Error(`maxCapacity must be a non-negative integer, got ${maxCapacity}`);
    }
    const url = new URL(messageQueueUrl);
    if (lastMessageId > 0) url.searchParams.set('lastMessageId', String(lastMessageId));
    const res = await this.transport.send({
      method: 'GET',
      url,
      route: 'GET message',
      headers: {
        accept: `application/json; api-version=${apiVersion}`,
        authorization: `Bearer ${queueToken}`,
        'x-scalesetmaxcapacity': String(maxCapacity),
      },
      repeat: 'idempotent',
      timeoutMs: this.longPollTimeoutMs,
      signal: opts.signal,
    });
    if (res.status === 202) return undefined;
    const parsed = this.parse(res, url, 'GET', [200], true);
    return parsed.json as RunnerScaleSetMessage;
  }

  /** Acknowledges a message, so the service stops redelivering it. */
  async deleteMessage(
    messageQueueUrl: string,
    queueToken: string,
    messageId: number,
    opts: CallOptions = {},
  ): Promise<void> {
    const url = new URL(messageQueueUrl);
    url.pathname = `${url.pathname.replace(/\/+$/, '')}/${messageId}`;
    const res = await this.transport.send({
      method: 'DELETE',
      url,
      route: 'DELETE message/{id}',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${queueToken}` },
      repeat: 'idempotent',
      signal: opts.signal,
    });
    this.parse(res, url, 'DELETE', [204], true);
  }

  /** Old-ARC API: the jobs the scale set could acquire now. */
  async getAcquirableJobs(scaleSetId: number, opts: CallOptions = {}): Promise<AcquirableJob[]> {
    const res = await this.call({
      method: 'GET',
      path: `${scaleSetsPath}/${scaleSetId}/acquirablejobs`,
      route: 'GET runnerscalesets/{id}/acquirablejobs',
      expect: [200, 204],
      repeat: 'idempotent',
      signal: opts.signal,
    });
    return res.status === 204 ? [] : this.list<AcquirableJob>(res);
  }

  /**
   * Claims jobs offered in JobAvailable messages, with the session's queue token. Returns the ids
   * actually acquired, which may be fewer (another scale set took one, or it was cancelled).
   */
  async acquireJobs(
    scaleSetId: number,
    queueToken: string,
    requestIds: number[],
    opts: CallOptions = {},
  ): Promise<number[]> {
    const conn = await this.tokens.get(opts.signal);
    const url = this.serviceUrl(conn.actionsUrl, `${scaleSetsPath}/${scaleSetId}/acquirejobs`);
    const res = await this.transport.send({
      method: 'POST',
      url,
      route: 'POST runnerscalesets/{id}/acquirejobs',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${queueToken}` },
      body: JSON.stringify(requestIds),
      repeat: 'once',
      signal: opts.signal,
    });
    const parsed = this.parse(res, url, 'POST', [200], true);
    return this.list<number>(parsed);
  }

  // ---- plumbing ----

  /** An admin-token call to the Actions service, with one re-authentication if the token is refused. */
  private async call(c: ServiceCall): Promise<ParsedResponse> {
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
  private serviceUrl(base: URL, path: string, query?: Record<string, string>): URL {
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

  private parse(
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

  private list<T>(res: ParsedResponse): T[] {
    const env = res.json as ListEnvelope<T> | undefined;
    if (!env || !Array.isArray(env.value)) {
      throw new ActionsError({
        kind: 'Other',
        method: res.method,
        url: res.url,
        statusCode: res.status,
        activityId: res.activityId,
        detail: 'response is not a {count, value} list',
      });
    }
    return env.value;
  }

  private atMostOne<T>(res: ParsedResponse, what: string): T | undefined {
    const items = this.list<T>(res);
    if (items.length > 1) {
      throw new ActionsError({
        kind: 'Other',
        method: res.method,
        url: res.url,
        statusCode: res.status,
        activityId: res.activityId,
        detail: `expected at most one of the ${what}, the service returned ${items.length}`,
      });
    }
    return items[0];
  }

  private session(res: ParsedResponse): RunnerScaleSetSession {
    const s = res.json as (RunnerScaleSetSession & { runnerScaleSet?: WireRunnerScaleSet }) | undefined;
    if (!s || !s.sessionId || !s.messageQueueUrl || !s.messageQueueAccessToken) {
      throw new ActionsError({
        kind: 'Other',
        method: res.method,
        url: res.url,
        statusCode: res.status,
        activityId: res.activityId,
        detail: 'session response lacks sessionId, messageQueueUrl or messageQueueAccessToken',
      });
    }
    return { ...s, runnerScaleSet: s.runnerScaleSet && fromWireScaleSet(s.runnerScaleSet) };
  }
}

interface ParsedResponse {
  status: number;
  json: unknown;
  url: string;
  method: string;
  activityId?: string;
}
