import { createSign, type KeyObject } from 'node:crypto';
import type { RunningSimulator } from './simulator';
import type { OwnerRef } from './types';

/**
 * Plain-fetch helpers for the simulator's own specs: they speak the wire protocol by hand (not
 * through libs/actions) so the specs pin what the simulator serves, independent of any client.
 */

export interface WireResponse {
  status: number;
  headers: Headers;
  text: string;
  /** Parsed JSON body (a leading BOM stripped), or undefined when the body is empty or not JSON. */
  json: unknown;
}

export async function call(
  method: string,
  url: string,
  opts: { auth?: string; body?: unknown; headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<WireResponse> {
  const headers: Record<string, string> = { 'Content-Type': 'application/json', ...opts.headers };
  if (opts.auth) headers.Authorization = opts.auth;
  const res = await fetch(url, {
    method,
    headers,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    signal: opts.signal,
  });
  const buf = Buffer.from(await res.arrayBuffer());
  const text = buf.toString('utf8');
  let json: unknown;
  try {
    json = text ? JSON.parse(text.replace(/^\uFEFF/, '')) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

export function obj(r: WireResponse): Record<string, unknown> {
  if (typeof r.json !== 'object' || r.json === null)
    throw new Error(`expected a JSON object, got ${r.status} ${r.text}`);
  return r.json as Record<string, unknown>;
}

export function restPath(owner: OwnerRef): string {
  if ('enterprise' in owner) return `enterprises/${owner.enterprise}`;
  return owner.repo ? `repos/${owner.org}/${owner.repo}` : `orgs/${owner.org}`;
}

export async function registrationToken(
  sim: RunningSimulator,
  owner: OwnerRef,
  credential = 'ghp_simulator',
): Promise<string> {
  const r = await call('POST', `${sim.url}/api/v3/${restPath(owner)}/actions/runners/registration-token`, {
    auth: `Bearer ${credential}`,
  });
  if (r.status !== 201) throw new Error(`registration token: ${r.status} ${r.text}`);
  return obj(r).token as string;
}

export interface AdminConnection {
  /** Actions base URL with its trailing slash, e.g. http://127.0.0.1:P/tenant/2/ */
  base: string;
  token: string;
  auth: string;
}

export async function connectAdmin(
  sim: RunningSimulator,
  owner: OwnerRef = { org: 'octo' },
): Promise<AdminConnection> {
  const regToken = await registrationToken(sim, owner);
  const r = await call('POST', `${sim.url}/api/v3/actions/runner-registration`, {
    auth: `RemoteAuth ${regToken}`,
    body: { url: sim.configUrl(owner), runner_event: 'register' },
  });
  if (r.status !== 201) throw new Error(`runner-registration: ${r.status} ${r.text}`);
  const { url, token } = obj(r) as { url: string; token: string };
  return { base: url, token, auth: `Bearer ${token}` };
}

/** `{base}_apis/{path}` with api-version=6.0-preview added to the query. */
export function apiUrl(
  conn: AdminConnection,
  path: string,
  query: Record<string, string | number> = {},
): string {
  const u = new URL(`${conn.base}_apis/${path}`);
  for (const [k, v] of Object.entries(query)) u.searchParams.set(k, String(v));
  u.searchParams.set('api-version', '6.0-preview');
  return u.toString();
}

export async function createScaleSet(
  conn: AdminConnection,
  name: string,
  extra: Record<string, unknown> = {},
): Promise<Record<string, unknown>> {
  const r = await call('POST', apiUrl(conn, 'runtime/runnerscalesets'), {
    auth: conn.auth,
    body: { name, runnerGroupId: 1, RunnerSetting: {}, createdOn: '0001-01-01T00:00:00Z', ...extra },
  });
  if (r.status !== 200) throw new Error(`create scale set: ${r.status} ${r.text}`);
  return obj(r);
}

export async function generateJit(
  conn: AdminConnection,
  scaleSetId: number,
  name: string,
): Promise<Record<string, unknown>> {
  const r = await call('POST', apiUrl(conn, `runtime/runnerscalesets/${scaleSetId}/generatejitconfig`), {
    auth: conn.auth,
    body: { name, workFolder: '_work' },
  });
  if (r.status !== 200) throw new Error(`generatejitconfig: ${r.status} ${r.text}`);
  return obj(r);
}

export interface OpenSession {
  sessionId: string;
  queueUrl: string;
  queueToken: string;
  statistics: Record<string, number>;
}

export async function createSession(
  conn: AdminConnection,
  scaleSetId: number,
  ownerName = 'listener-0',
): Promise<OpenSession> {
  const r = await call('POST', apiUrl(conn, `runtime/runnerscalesets/${scaleSetId}/sessions`), {
    auth: conn.auth,
    body: { sessionId: '00000000-0000-0000-0000-000000000000', ownerName },
  });
  if (r.status !== 200) throw new Error(`create session: ${r.status} ${r.text}`);
  const s = obj(r);
  return {
    sessionId: s.sessionId as string,
    queueUrl: s.messageQueueUrl as string,
    queueToken: s.messageQueueAccessToken as string,
    statistics: s.statistics as Record<string, number>,
  };
}

export async function getMessage(
  session: OpenSession,
  lastMessageId = 0,
  maxCapacity?: number,
): Promise<
  WireResponse & {
    message?: {
      messageId: number;
      items: Array<Record<string, unknown>>;
      statistics: Record<string, number>;
    };
  }
> {
  const u = new URL(session.queueUrl);
  if (lastMessageId > 0) u.searchParams.set('lastMessageId', String(lastMessageId));
  const headers: Record<string, string> = { Accept: 'application/json; api-version=6.0-preview' };
  if (maxCapacity !== undefined) headers['X-ScaleSetMaxCapacity'] = String(maxCapacity);
  const r = await call('GET', u.toString(), { auth: `Bearer ${session.queueToken}`, headers });
  if (r.status !== 200) return r;
  const m = obj(r);
  return {
    ...r,
    message: {
      messageId: m.messageId as number,
      items: m.body ? (JSON.parse(m.body as string) as Array<Record<string, unknown>>) : [],
      statistics: m.statistics as Record<string, number>,
    },
  };
}

export function deleteMessageUrl(session: OpenSession, messageId: number): string {
  const u = new URL(session.queueUrl);
  u.pathname = `${u.pathname}/${messageId}`;
  return u.toString();
}

export async function acquire(
  conn: AdminConnection,
  session: OpenSession,
  scaleSetId: number,
  ids: number[],
): Promise<WireResponse> {
  return call('POST', apiUrl(conn, `runtime/runnerscalesets/${scaleSetId}/acquirejobs`), {
    auth: `Bearer ${session.queueToken}`,
    body: ids,
  });
}

export function appJwt(
  privateKey: KeyObject,
  iss: string | number,
  nowSec = Math.floor(Date.now() / 1000),
): string {
  const iat = nowSec - 60;
  return signRs256({ iat, exp: iat + 9 * 60, iss: String(iss) }, privateKey);
}

export function signRs256(claims: Record<string, unknown>, privateKey: KeyObject): string {
  const head = Buffer.from(JSON.stringify({ alg: 'RS256', typ: 'JWT' })).toString('base64url');
  const body = Buffer.from(JSON.stringify(claims)).toString('base64url');
  const sig = createSign('RSA-SHA256').update(`${head}.${body}`).sign(privateKey).toString('base64url');
  return `${head}.${body}.${sig}`;
}

export function jwtClaims(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8')) as Record<
    string,
    unknown
  >;
}
