import type { IncomingHttpHeaders } from 'node:http';
import type { GitHubAccounts } from './accounts';
import type { ActionsService, Session } from './actions-service';
import { vssError } from './errors';
import type { OwnerRef, RunnerView, TimingOptions } from './types';

/**
 * The protocol surface as a table: each route has the call-counter key tests use for counters and
 * faults (`DELETE agents/{id}`), the error dialect it answers in, and how it authenticates. REST lives
 * under `/api/v3` (a GHES-shaped host); the Actions service under `/tenant/{tenantId}/_apis`.
 */

export type RouteKind = 'rest' | 'actions';

export interface RouteRequest {
  params: Record<string, string>;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: unknown;
  /** Fires when the client goes away or the simulator stops; long polls end on it. */
  signal: AbortSignal;
}

export interface RouteResponse {
  status: number;
  body?: unknown;
}

export interface Route {
  method: string;
  key: string;
  kind: RouteKind;
  pattern: RegExp;
  paramNames: string[];
  handle(req: RouteRequest): RouteResponse | Promise<RouteResponse>;
}

export interface RouteDeps {
  accounts: GitHubAccounts;
  actions: ActionsService;
  timing: TimingOptions;
  origin(): string;
  /** Awaited after a registration is removed and before the remover gets its answer (tests). */
  onRunnerRemoved?: (runner: RunnerView) => Promise<void>;
}

const API_VERSION = '6.0-preview';

function compile(path: string): { pattern: RegExp; paramNames: string[] } {
  const paramNames: string[] = [];
  const source = path
    .split('/')
    .map((seg) => {
      const m = /^\{(\w+)\}$/.exec(seg);
      if (!m) return seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      paramNames.push(m[1]);
      return '([^/]+)';
    })
    .join('/');
  return { pattern: new RegExp(`^${source}$`, 'i'), paramNames };
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}

function bearerToken(headers: IncomingHttpHeaders): string | null {
  const auth = header(headers, 'authorization');
  const m = auth ? /^bearer\s+(.+)$/i.exec(auth) : null;
  return m ? m[1].trim() : null;
}

function int(value: string, what: string): number {
  if (!/^\d+$/.test(value))
    throw vssError(400, 'ArgumentException', `${what} must be a positive integer, got '${value}'.`);
  return Number(value);
}

function objectBody(body: unknown): Record<string, unknown> {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw vssError(400, 'ArgumentException', 'The request body must be a JSON object.');
  }
  return body as Record<string, unknown>;
}

function list(value: unknown[]): RouteResponse {
  return { status: 200, body: { count: value.length, value } };
}

export function buildRoutes(deps: RouteDeps): Route[] {
  const { accounts, actions } = deps;
  const routes: Route[] = [];

  const add = (
    kind: Route['kind'],
    method: string,
    key: string,
    path: string,
    handle: Route['handle'],
  ): void => {
    routes.push({ method, key: `${method} ${key}`, kind, ...compile(path), handle });
  };
  /** An Actions service route under the tenant. */
  const actionsRoute = (method: string, key: string, path: string, handle: Route['handle']): void =>
    add('actions', method, key, `/tenant/{tenantId}/_apis/${path}`, handle);

  const rest = (method: string, key: string, path: string, handle: Route['handle']): void =>
    add('rest', method, key, `/api/v3/${path}`, handle);

  /** Admin-token route of the Actions service: token for this tenant, and api-version on the query. */
  const admin = (
    method: string,
    key: string,
    path: string,
    handle: (tenantId: string, req: RouteRequest) => RouteResponse | Promise<RouteResponse>,
  ): void => {
    actionsRoute(method, key, path, (req) => {
      const tenantId = req.params.tenantId;
      if (!accounts.adminTokenValid(header(req.headers, 'authorization'), tenantId)) {
        throw vssError(
          401,
          'VssUnauthorizedException',
          'The admin token is missing, expired, or not valid for this tenant.',
        );
      }
      if (deps.timing.requireApiVersion) {
        const v = req.query.get('api-version');
        if (v === null) {
          throw vssError(
            400,
            'VssVersionNotSpecifiedException',
            `The api-version query parameter is required (${API_VERSION}).`,
          );
        }
        if (v !== API_VERSION) {
          throw vssError(
            400,
            'VssVersionOutOfRangeException',
            `The api-version '${v}' is not supported; use ${API_VERSION}.`,
          );
        }
      }
      return handle(tenantId, req);
    });
  };

  /** Message-queue route: authenticated by the session's queue token, not the admin token. */
  const queue = (
    method: string,
    key: string,
    path: string,
    handle: (session: Session, req: RouteRequest) => RouteResponse | Promise<RouteResponse>,
  ): void => {
    actionsRoute(method, key, path, (req) => {
      const session = actions.sessions.authenticateQueue(
        req.params.tenantId,
        int(req.params.id, 'scale set id'),
        bearerToken(req.headers),
      );
      return handle(session, req);
    });
  };

  // ---- GitHub REST ------------------------------------------------------------------------

  rest('POST', 'app/installations/{id}/access_tokens', 'app/installations/{id}/access_tokens', (req) => {
    const id = /^\d+$/.test(req.params.id) ? Number(req.params.id) : -1;
    return { status: 201, body: accounts.issueInstallationToken(header(req.headers, 'authorization'), id) };
  });

  const registrationToken = (owner: OwnerRef, req: RouteRequest): RouteResponse => ({
    status: 201,
    body: accounts.issueRegistrationToken(header(req.headers, 'authorization'), owner),
  });
  rest(
    'POST',
    'orgs/{org}/actions/runners/registration-token',
    'orgs/{org}/actions/runners/registration-token',
    (req) => registrationToken({ org: req.params.org }, req),
  );
  rest(
    'POST',
    'enterprises/{enterprise}/actions/runners/registration-token',
    'enterprises/{enterprise}/actions/runners/registration-token',
    (req) => registrationToken({ enterprise: req.params.enterprise }, req),
  );
  rest(
    'POST',
    'repos/{owner}/{repo}/actions/runners/registration-token',
    'repos/{owner}/{repo}/actions/runners/registration-token',
    (req) => registrationToken({ org: req.params.owner, repo: req.params.repo }, req),
  );
  rest('POST', 'actions/runner-registration', 'actions/runner-registration', (req) => ({
    status: 201,
    body: accounts.registerRunnerAdmin(header(req.headers, 'authorization'), req.body, deps.origin()),
  }));

  // ---- Actions service: admin token -------------------------------------------------------

  admin('GET', 'runnergroups', 'runtime/runnergroups', (tenantId, req) =>
    list(actions.scaleSets.runnerGroupsByName(tenantId, req.query.get('groupName'))),
  );
  admin('GET', 'runnerscalesets', 'runtime/runnerscalesets', (tenantId, req) => {
    const group = req.query.get('runnerGroupId');
    return list(
      actions.scaleSets.find(
        tenantId,
        group === null || group === '' ? null : int(group, 'runnerGroupId'),
        req.query.get('name'),
      ),
    );
  });
  admin('POST', 'runnerscalesets', 'runtime/runnerscalesets', (tenantId, req) => ({
    status: 200,
    body: actions.scaleSets.create(tenantId, objectBody(req.body)),
  }));
  admin('GET', 'runnerscalesets/{id}', 'runtime/runnerscalesets/{id}', (tenantId, req) => ({
    status: 200,
    body: actions.scaleSets.get(tenantId, int(req.params.id, 'scale set id')),
  }));
  admin('PATCH', 'runnerscalesets/{id}', 'runtime/runnerscalesets/{id}', (tenantId, req) => ({
    status: 200,
    body: actions.scaleSets.update(tenantId, int(req.params.id, 'scale set id'), objectBody(req.body)),
  }));
  admin('DELETE', 'runnerscalesets/{id}', 'runtime/runnerscalesets/{id}', (tenantId, req) => {
    actions.scaleSets.delete(tenantId, int(req.params.id, 'scale set id'));
    return { status: 204 };
  });
  admin(
    'POST',
    'runnerscalesets/{id}/generatejitconfig',
    'runtime/runnerscalesets/{id}/generatejitconfig',
    (tenantId, req) => ({
      status: 200,
      body: actions.registrations.generateJitConfig(
        tenantId,
        int(req.params.id, 'scale set id'),
        objectBody(req.body),
      ),
    }),
  );
  admin(
    'GET',
    'runnerscalesets/{id}/acquirablejobs',
    'runtime/runnerscalesets/{id}/acquirablejobs',
    (tenantId, req) => {
      const jobs = actions.jobs.acquirable(tenantId, int(req.params.id, 'scale set id'));
      return jobs.length === 0 ? { status: 204 } : list(jobs);
    },
  );
  admin(
    'POST',
    'runnerscalesets/{id}/sessions',
    'runtime/runnerscalesets/{id}/sessions',
    (tenantId, req) => ({
      status: 200,
      body: actions.sessions.create(tenantId, int(req.params.id, 'scale set id'), objectBody(req.body)),
    }),
  );
  admin(
    'PATCH',
    'runnerscalesets/{id}/sessions/{sessionId}',
    'runtime/runnerscalesets/{id}/sessions/{sessionId}',
    (tenantId, req) => ({
      status: 200,
      body: actions.sessions.refresh(tenantId, int(req.params.id, 'scale set id'), req.params.sessionId),
    }),
  );
  admin(
    'DELETE',
    'runnerscalesets/{id}/sessions/{sessionId}',
    'runtime/runnerscalesets/{id}/sessions/{sessionId}',
    (tenantId, req) => {
      actions.sessions.delete(tenantId, int(req.params.id, 'scale set id'), req.params.sessionId);
      return { status: 204 };
    },
  );
  admin('GET', 'agents', 'distributedtask/pools/{poolId}/agents', (tenantId, req) =>
    list(actions.registrations.list(tenantId, req.query.get('agentName'))),
  );
  admin('GET', 'agents/{id}', 'distributedtask/pools/{poolId}/agents/{id}', (tenantId, req) => {
    const id = /^\d+$/.test(req.params.id) ? Number(req.params.id) : -1;
    return { status: 200, body: actions.registrations.get(tenantId, id) };
  });
  admin('DELETE', 'agents/{id}', 'distributedtask/pools/{poolId}/agents/{id}', async (tenantId, req) => {
    const id = /^\d+$/.test(req.params.id) ? Number(req.params.id) : -1;
    const view = actions.registrations.views().find((r) => r.id === id);
    actions.registrations.remove(tenantId, id);
    // Before the caller hears of it: what the world looked like at the moment the service let go.
    if (view) await deps.onRunnerRemoved?.(view);
    return { status: 204 };
  });

  // ---- Actions service: message queue token -----------------------------------------------

  queue(
    'GET',
    'runnerscalesets/{id}/messages',
    'runtime/runnerscalesets/{id}/messages',
    async (session, req) => {
      const last = req.query.get('lastMessageId');
      const capacity = header(req.headers, 'x-scalesetmaxcapacity');
      const message = await actions.sessions.getMessage(
        session,
        last && /^\d+$/.test(last) ? Number(last) : 0,
        capacity !== undefined && /^\d+$/.test(capacity.trim()) ? Number(capacity.trim()) : null,
        req.signal,
      );
      return message ? { status: 200, body: message } : { status: 202 };
    },
  );
  queue(
    'DELETE',
    'runnerscalesets/{id}/messages/{messageId}',
    'runtime/runnerscalesets/{id}/messages/{messageId}',
    (session, req) => {
      actions.sessions.deleteMessage(session, int(req.params.messageId, 'message id'));
      return { status: 204 };
    },
  );
  queue(
    'POST',
    'runnerscalesets/{id}/acquirejobs',
    'runtime/runnerscalesets/{id}/acquirejobs',
    (session, req) => {
      if (!Array.isArray(req.body) || !req.body.every((v) => typeof v === 'number' && Number.isInteger(v))) {
        throw vssError(
          400,
          'ArgumentException',
          'The request body must be a JSON array of runner request ids.',
        );
      }
      return list(actions.jobs.acquire(session, req.body as number[]));
    },
  );

  return routes;
}

export function matchRoute(
  routes: Route[],
  method: string,
  path: string,
): { route: Route; params: Record<string, string> } | { allowed: string[] } | null {
  const allowed: string[] = [];
  for (const route of routes) {
    const m = route.pattern.exec(path);
    if (!m) continue;
    if (route.method !== method) {
      allowed.push(route.method);
      continue;
    }
    const params: Record<string, string> = {};
    route.paramNames.forEach((name, i) => (params[name] = decodeURIComponent(m[i + 1])));
    return { route, params };
  }
  return allowed.length > 0 ? { allowed } : null;
}
