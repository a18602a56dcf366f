import { CONNECT_FAILURE_CODES } from '@aro/actions';

/**
 * What a failed Key Vault read says, from the errors `@azure/keyvault-secrets` (a `RestError` with
 * the vault's status) and `@azure/identity` (MSAL's errors, wrapped, for the token request) throw:
 * a refusal a person must answer, or an outage that passes.
 */

/** The vault's HTTP status, when it answered. */
export function statusOf(err: unknown): number | undefined {
  const status = (err as { statusCode?: unknown } | undefined)?.statusCode;
  return typeof status === 'number' ? status : undefined;
}

/** The vault's error code (`SecretNotFound`, `ServiceUnavailable`) or the transport's (`ECONNRESET`). */
export function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : '';
}

/** MSAL's error codes of an error and its causes (the identity library wraps MSAL's error). */
function entraCodesOf(err: unknown): { code: string; status?: number }[] {
  const found: { code: string; status?: number }[] = [];
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const fields = e as { errorCode?: unknown; errorResponse?: { error?: unknown }; statusCode?: unknown };
    const code = typeof fields.errorCode === 'string' ? fields.errorCode : fields.errorResponse?.error;
    if (typeof code === 'string') {
      found.push({ code, status: typeof fields.statusCode === 'number' ? fields.statusCode : undefined });
    }
  }
  return found;
}

const OAUTH_REFUSALS =
  /^(invalid_client|unauthorized_client|invalid_request|invalid_grant|invalid_scope|invalid_resource)$/;

/**
 * What Entra ID said when it refused the token request (`invalid_client`, `unauthorized_client`...),
 * or undefined when the failure was not a refusal.
 */
export function entraRefusal(err: unknown): string | undefined {
  const refusal = entraCodesOf(err).find((c) => OAUTH_REFUSALS.test(c.code));
  if (refusal === undefined) return undefined;
  return `${refusal.status === undefined ? '' : `${refusal.status} `}${refusal.code}`;
}

/**
 * Entra's answers that say "not now" (`temporarily_unavailable`, `server_error`: a 5xx of the token
 * endpoint) and MSAL's own `network_error` (the token request got no answer: reset, refused, timed out).
 */
const ENTRA_OUTAGES = /^(temporarily_unavailable|server_error|network_error)$/;

/** Vault statuses sent for a request that may succeed later: throttling, timeouts, every 5xx. */
function isOutageStatus(status: number): boolean {
  return status >= 500 || status === 408 || status === 429;
}

/**
 * Connection failures that pass (a vault or a proxy restarting, a connection dropped by a load
 * balancer, a name that does not resolve for now). A certificate the client does not trust is
 * deliberately absent: it stays untrusted until a person changes the CA.
 */
const NETWORK_OUTAGE_CODES = new Set([
  ...CONNECT_FAILURE_CODES,
  // And a connection that broke or went silent after it was made.
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'UND_ERR_SOCKET',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'REQUEST_SEND_ERROR',
]);

/**
 * Why the vault or Entra ID could not answer for now, in words for the message (`the vault answered
 * 503 ServiceUnavailable`), or undefined when the failure is not an outage (a refusal, an untrusted
 * certificate, the caller giving up). `deadline` is the signal the read ran under: its own timeout
 * firing means the vault did not answer in time, an abort for another reason is the caller's.
 */
export function azureOutage(err: unknown, deadline: AbortSignal | undefined): string | undefined {
  if (deadline?.aborted) {
    const reason = deadline.reason as { name?: unknown } | undefined;
    return reason?.name === 'TimeoutError' ? 'no answer from the vault or Entra ID in time' : undefined;
  }
  const status = statusOf(err);
  if (status !== undefined) {
    return isOutageStatus(status) ? `the vault answered ${status} ${codeOf(err)}`.trimEnd() : undefined;
  }
  const entra = entraCodesOf(err).find((c) => ENTRA_OUTAGES.test(c.code));
  if (entra !== undefined) {
    return `Entra ID's token endpoint failed (${entra.status === undefined ? '' : `${entra.status} `}${entra.code})`;
  }
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = codeOf(e);
    if (NETWORK_OUTAGE_CODES.has(code)) return `the vault could not be reached (${code})`;
  }
  return undefined;
}
