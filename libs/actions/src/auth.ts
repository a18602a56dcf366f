import type { Logger } from '@aro/observability/lean';
import { KeyObject } from 'node:crypto';
import { GitHubConfig, registrationTokenPath, registrationTokenRoute } from './config-url';
import { ActionsError, errorFromResponse, redactUrl, stripBom } from './errors';
import { createAppJwt, jwtExpiryMs, parsePrivateKey } from './jwt';
import { ActionsMetrics } from './metrics';
import { HttpTransport, TransportRequest, TransportResponse } from './transport';

export type GitHubCredentials =
  | { kind: 'pat'; token: string }
  | {
      kind: 'app';
      /** The numeric App ID or the Client ID (`Iv1...`); either is accepted as the JWT issuer. */
      appId: string;
      installationId: number;
      /** PEM, RSA (PKCS#1 as GitHub issues it, or PKCS#8). */
      privateKey: string;
    };

/** An admin connection to the Actions service, as handed out by runner-registration. */
export interface AdminConnection {
  actionsUrl: URL;
  token: string;
  expiresAtMs: number;
}

export interface AdminTokenSourceOptions {
  config: GitHubConfig;
  credentials: GitHubCredentials;
  transport: HttpTransport;
  metrics: ActionsMetrics;
  logger: Logger;
  /** A token is replaced once now + margin passes its expiry, so no request carries one about to lapse. */
  refreshMarginMs?: number;
  now?: () => number;
}

/**
 * Turns GitHub credentials into an Actions service admin token, and keeps one valid:
 *   [App: JWT -> installation token] -> registration token -> runner-registration -> {Actions URL, admin JWT}.
 * Only the admin token is cached; the intermediate tokens are single-use and minted again on each
 * refresh, as the Go client does. Concurrent callers needing a refresh share one exchange.
 */
export class AdminTokenSource {
  private current?: AdminConnection;
  private inflight?: Promise<AdminConnection>;
  private readonly privateKey?: KeyObject;
  private readonly refreshMarginMs: number;
  private readonly now: () => number;

  constructor(private readonly o: AdminTokenSourceOptions) {
    this.refreshMarginMs = o.refreshMarginMs ?? 60_000;
    this.now = o.now ?? Date.now;
    validateCredentials(o.credentials);
    // Parsing up front turns a malformed key into an error when the client is made, not on first use.
    if (o.credentials.kind === 'app') this.privateKey = parsePrivateKey(o.credentials.privateKey);
  }

  /** A connection whose token is valid for at least the refresh margin. */
  async get(signal?: AbortSignal): Promise<AdminConnection> {
    const c = this.current;
    if (c && this.now() + this.refreshMarginMs < c.expiresAtMs) return c;
    return this.refresh(signal);
  }

  /**
   * Drops `token` after the service rejected it (revoked, or the service restarted), so the next
   * get() exchanges again; a newer token obtained meanwhile by another caller is kept.
   */
  invalidate(token: string): void {
    if (this.current?.token === token) this.current = undefined;
  }

  private refresh(signal?: AbortSignal): Promise<AdminConnection> {
    // The shared exchange is not tied to the first caller's signal: its abort must not fail the
    // others. Each caller stops waiting on its own signal instead.
    this.inflight ??= this.exchange().finally(() => {
      this.inflight = undefined;
    });
    return signal ? raceAbort(this.inflight, signal) : this.inflight;
  }

  private async exchange(): Promise<AdminConnection> {
    const { config, logger, metrics } = this.o;
    try {
      const githubToken = await this.githubToken();
      const registrationToken = await this.registrationToken(githubToken);
      const conn = await this.runnerRegistration(registrationToken);
      this.current = conn;
      metrics.adminTokenRefreshes.inc({ result: 'success' });
      logger.debug('Obtained an Actions service admin token', {
        configUrl: config.configUrl.href,
        actionsUrl: redactUrl(conn.actionsUrl),
        expiresAt: new Date(conn.expiresAtMs).toISOString(),
      });
      return conn;
    } catch (e) {
      metrics.adminTokenRefreshes.inc({ result: 'failure' });
      throw e;
    }
  }

  private async githubToken(): Promise<string> {
    const creds = this.o.credentials;
    if (creds.kind === 'pat') return creds.token;
    const jwt = createAppJwt(creds.appId, this.privateKey!, this.now());
    const url = this.o.config.gitHubApiUrl(`/app/installations/${creds.installationId}/access_tokens`);
    const route = 'POST app/installations/{id}/access_tokens';
    const res = await this.postForToken(url, route, jwt, 'application/vnd.github+json');
    return this.tokenFrom(res, url, 201, 'installation access token');
  }

  private async registrationToken(githubToken: string): Promise<string> {
    const url = this.o.config.gitHubApiUrl(registrationTokenPath(this.o.config));
    const route = registrationTokenRoute(this.o.config);
    const res = await this.postForToken(url, route, githubToken, 'application/vnd.github.v3+json');
    return this.tokenFrom(res, url, 201, 'registration token');
  }

  /** A GitHub REST POST that answers with a token; repeating it only mints another. */
  private postForToken(
    url: URL,
    route: string,
    bearer: string,
    contentType: string,
  ): Promise<TransportResponse> {
    return this.rest({
      method: 'POST',
      url,
      route,
      headers: {
        authorization: `Bearer ${bearer}`,
        accept: 'application/vnd.github+json',
        'content-type': contentType,
      },
      repeat: 'idempotent',
    });
  }

  private async runnerRegistration(registrationToken: string): Promise<AdminConnection> {
    const url = this.o.config.gitHubApiUrl('/actions/runner-registration');
    const res = await this.rest({
      method: 'POST',
      url,
      route: 'POST actions/runner-registration',
      headers: { authorization: `RemoteAuth ${registrationToken}`, 'content-type': 'application/json' },
      body:
        JSON.stringify({ url: this.o.config.configUrl.href.replace(/\/+$/, ''), runner_event: 'register' }) +
        '\n',
      repeat: 'idempotent',
      // A freshly created App installation or token can be refused for a moment.
      extraRetryStatuses: [401, 403],
    });
    if (res.status < 200 || res.status > 299) throw this.restError(res, url, 'POST');
    const body = this.json<{ url?: unknown; token?: unknown }>(res, url);
    const invalid = (detail: string) => malformedPost(res, url, detail);
    if (typeof body.url !== 'string' || body.url === '')
      throw invalid('runner-registration response has no url');
    if (typeof body.token !== 'string' || body.token === '')
      throw invalid('runner-registration response has no token');
    let actionsUrl: URL;
    try {
      actionsUrl = new URL(body.url);
    } catch {
      throw invalid(`runner-registration returned an invalid Actions URL ${JSON.stringify(body.url)}`);
    }
    let expiresAtMs: number;
    try {
      expiresAtMs = jwtExpiryMs(body.token);
    } catch (e) {
      throw invalid(`cannot read the admin token's expiry: ${(e as Error).message}`);
    }
    return { actionsUrl, token: body.token, expiresAtMs };
  }

  private rest(req: TransportRequest): Promise<TransportResponse> {
    return this.o.transport.send(req);
  }

  private tokenFrom(res: TransportResponse, url: URL, expected: number, what: string): string {
    if (res.status !== expected) throw this.restError(res, url, 'POST');
    const body = this.json<{ token?: unknown }>(res, url);
    if (typeof body.token !== 'string' || body.token === '') {
      throw malformedPost(res, url, `response carries no ${what}`);
    }
    return body.token;
  }

  private restError(res: TransportResponse, url: URL, method: string): ActionsError {
    return errorFromResponse({
      method,
      url: redactUrl(url),
      statusCode: res.status,
      contentType: res.headers['content-type'],
      activityId: res.headers['activityid'],
      requestId: res.headers['x-github-request-id'],
      body: res.body,
      onMessageQueue: false,
    });
  }

  private json<T>(res: TransportResponse, url: URL): T {
    try {
      return JSON.parse(stripBom(res.body).toString('utf8')) as T;
    } catch (e) {
      throw malformedPost(res, url, `response is not JSON: ${(e as Error).message}`);
    }
  }
}

export function validateCredentials(c: GitHubCredentials): void {
  if (c.kind === 'pat') {
    if (!c.token) throw new Error('GitHub credentials: the personal access token is empty');
    return;
  }
  if (!c.appId) throw new Error('GitHub credentials: the GitHub App id is empty');
  if (!Number.isSafeInteger(c.installationId) || c.installationId <= 0) {
    throw new Error(`GitHub credentials: the installation id ${c.installationId} is not a positive integer`);
  }
  if (!c.privateKey) throw new Error('GitHub credentials: the GitHub App private key is empty');
}

function raceAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

/** A POST answered as expected whose body is not what the call needs. */
function malformedPost(res: TransportResponse, url: URL, detail: string): ActionsError {
  return new ActionsError({
    kind: 'Other',
    method: 'POST',
    url: redactUrl(url),
    statusCode: res.status,
    requestId: res.headers['x-github-request-id'],
    detail,
  });
}
