/**
 * When to repeat a request, after go-retryablehttp (what the Go client uses), with one change: a
 * request that must not take effect twice is repeated only when the server certainly did not act.
 */
import { InvalidConfigUrlError } from './config-url';
import { actionsErrorOf } from './errors';
import {
  certificateTrustCodes,
  connectTimeoutCode,
  errorCodeOf,
  errorCodesOf,
  proxyTunnelErrorOf,
  proxyUnreachableCode,
} from './error-codes';

export interface RetryOptions {
  /** Retries after the first attempt (so up to maxRetries + 1 attempts). */
  maxRetries?: number;
  minWaitMs?: number;
  /** Caps the exponential backoff and any Retry-After the server asks for. */
  maxWaitMs?: number;
}

export type ResolvedRetryOptions = Required<RetryOptions>;

export const defaultRetryOptions: ResolvedRetryOptions = {
  maxRetries: 4,
  minWaitMs: 1000,
  maxWaitMs: 30_000,
};

export function resolveRetryOptions(o: RetryOptions | undefined): ResolvedRetryOptions {
  const r = { ...defaultRetryOptions, ...stripUndefined(o ?? {}) };
  if (!(r.maxRetries >= 0) || !(r.minWaitMs >= 0) || !(r.maxWaitMs >= r.minWaitMs)) {
    throw new Error(
      `invalid retry options ${JSON.stringify(o)}: need maxRetries >= 0 and 0 <= minWaitMs <= maxWaitMs`,
    );
  }
  return r;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * Whether a call may be sent again after it may already have reached the server.
 * - `idempotent`: repeating it leaves the same state (GET, DELETE, PATCH to set fields, session
 *   refresh) or only mints another throw-away token (the three authentication calls).
 * - `once`: repeating it could act twice (generate a second JIT config, create a second scale set or
 *   session, acquire jobs twice); it is repeated only on 429/503, which a server sends instead of
 *   acting, and on failures to connect, when nothing was sent.
 */
export type Repeatability = 'idempotent' | 'once';

/** Statuses a server returns without having acted, so any call may be repeated. */
const notActedStatuses = new Set([429, 503]);

function isRetryableStatus(status: number, repeat: Repeatability, extra: readonly number[] = []): boolean {
  if (notActedStatuses.has(status) || extra.includes(status)) return true;
  // 501 says the server will never do it; every other 5xx may be transient, but also may come
  // after the server acted (a 502/504 from a gateway that timed out waiting), hence idempotent only.
  return repeat === 'idempotent' && status >= 500 && status <= 599 && status !== 501;
}

/** How far a failed attempt got, which decides whether it may be repeated. */
export type TransportFailure = 'not-sent' | 'maybe-sent' | 'permanent';

/**
 * Failures to make a connection at all (refused, a name that does not resolve for now, no route, the
 * connect timing out): nothing was sent, and they pass when the far end or the network comes back.
 * The secret sources' outage check counts them too.
 */
export const CONNECT_FAILURE_CODES: readonly string[] = [
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENETDOWN',
  connectTimeoutCode,
];

const notSentCodes = new Set([...CONNECT_FAILURE_CODES, proxyUnreachableCode]);

const permanentCodes = new Set([
  // Retrying cannot fix a certificate the client does not trust, or a malformed request.
  ...certificateTrustCodes,
  'ERR_INVALID_URL',
  // A header or path Node refuses to send.
  'ERR_INVALID_HTTP_TOKEN',
  'ERR_INVALID_CHAR',
  'ERR_UNESCAPED_CHARACTERS',
  'ERR_INVALID_PROTOCOL',
]);

export function classifyTransportError(e: unknown): TransportFailure {
  // A certificate nobody trusts stays untrusted, also when it is the proxy's, deeper in the chain.
  if (errorCodesOf(e).some((c) => permanentCodes.has(c))) return 'permanent';
  // A proxy refusing the CONNECT tunnel answers before anything reached the target; if it refused
  // our credentials (407), asking again with the same ones cannot help.
  const tunnel = proxyTunnelErrorOf(e);
  if (tunnel?.proxyStatus !== undefined) return tunnel.proxyStatus === 407 ? 'permanent' : 'not-sent';
  const code = errorCodeOf(e);
  if (code && notSentCodes.has(code)) return 'not-sent';
  return 'maybe-sent';
}

/** Exponential backoff, min·2^retry capped at max, with up to +25 % jitter so that clients that failed together do not retry together. */
export function backoffMs(
  retry: number,
  o: ResolvedRetryOptions,
  random: () => number = Math.random,
): number {
  const base = Math.min(o.maxWaitMs, o.minWaitMs * 2 ** retry);
  return Math.min(o.maxWaitMs, Math.round(base * (1 + 0.25 * random())));
}

/** A Retry-After header (delta seconds or an HTTP date) as milliseconds from now, if it parses. */
export function parseRetryAfterMs(value: string | undefined, nowMs: number = Date.now()): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

/** The wait before the next attempt: the server's Retry-After on 429/503 (capped), else backoff. */
function retryWaitMs(
  retry: number,
  status: number | undefined,
  retryAfter: string | undefined,
  o: ResolvedRetryOptions,
  random: () => number = Math.random,
  nowMs: number = Date.now(),
): number {
  if (status === 429 || status === 503) {
    const asked = parseRetryAfterMs(retryAfter, nowMs);
    if (asked !== undefined) return Math.min(asked, o.maxWaitMs);
  }
  return backoffMs(retry, o, random);
}

/** A failed attempt: a response with a status that is not success, or an error and no response. */
export type FailedAttempt = { status: number; retryAfter?: string } | { error: unknown };

/** What the call allows: whether it may act twice, and statuses it retries beyond the usual ones. */
export interface RetryCall {
  repeat: Repeatability;
  /** Statuses retried for this call in addition to the usual ones (runner-registration: 401, 403). */
  extraRetryStatuses?: readonly number[];
}

/** Ask again after `waitMs`, or give up (with how far a response-less attempt got). */
export type RetryDecision = { retry: true; waitMs: number } | { retry: false; failure?: TransportFailure };

/**
 * The one answer to "is this retryable, and how long to wait", for the transport's attempts and for
 * whoever holds an error that came out of a client (the controllers, through {@link isRetryable}).
 *
 * A response is retried on a status the server sends without having acted (429, 503; then after its
 * Retry-After, capped), on another 5xx but 501 when the call is idempotent, or on a status the call
 * names. A response-less attempt is retried when the request was certainly not sent (a refused
 * connection, a proxy that refused the tunnel but not our credentials), or may have been sent and the
 * call is idempotent; never when only a person can fix it (an untrusted certificate, a malformed
 * request, a proxy refusing our credentials). `retries` is how many were already made: past
 * `options.maxRetries` the answer is no.
 */
export function retryDecision(
  attempt: FailedAttempt,
  call: RetryCall,
  retries: number,
  options: ResolvedRetryOptions,
  random: () => number = Math.random,
  nowMs: number = Date.now(),
): RetryDecision {
  let retryable: boolean;
  let failure: TransportFailure | undefined;
  if ('status' in attempt) {
    retryable = isRetryableStatus(attempt.status, call.repeat, call.extraRetryStatuses);
  } else {
    failure = classifyTransportError(attempt.error);
    retryable = failure === 'not-sent' || (failure === 'maybe-sent' && call.repeat === 'idempotent');
  }
  if (!retryable || retries >= options.maxRetries) return { retry: false, failure };
  const status = 'status' in attempt ? attempt.status : undefined;
  const retryAfter = 'status' in attempt ? attempt.retryAfter : undefined;
  return { retry: true, waitMs: retryWaitMs(retries, status, retryAfter, options, random, nowMs) };
}

/**
 * Whether asking again can succeed without a person changing something, for an error a client threw
 * (its retries spent): by the same rules as {@link retryDecision}, for an idempotent call. A config
 * URL that is not one never becomes one.
 */
export function isRetryable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (e instanceof InvalidConfigUrlError) return false;
  }
  const actions = actionsErrorOf(err);
  const attempt: FailedAttempt =
    actions?.statusCode !== undefined ? { status: actions.statusCode } : { error: err };
  return retryDecision(attempt, { repeat: 'idempotent' }, 0, { ...defaultRetryOptions, maxRetries: 1 }).retry;
}
