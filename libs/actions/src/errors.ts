/**
 * What went wrong talking to GitHub or the Actions service, classified so that callers branch on a
 * kind instead of parsing messages. The Actions service reports failures as a VSS "wrapped
 * exception" body whose `typeName` names the exception; matching is by substring (as the Go client
 * does), so `AgentExistsException`, `TaskAgentExistsException` and the fully qualified name all match.
 */
export type ActionsErrorKind =
  | 'RunnerExists'
  | 'RunnerNotFound'
  | 'JobStillRunning'
  | 'NotFound'
  | 'MessageQueueTokenExpired'
  | 'SessionConflict'
  /** The service no longer knows the listener's session (expired, deleted): open a new one. */
  | 'SessionGone'
  | 'Unauthorized'
  /** 429: the service asks the caller to slow down. */
  | 'RateLimited'
  /** The server's certificate is not trusted, or TLS could not start: a CA or the URL must change. */
  | 'TlsFailure'
  /** The configured proxy could not be reached, or refused the request or its credentials. */
  | 'ProxyFailure'
  | 'Other';

export interface ActionsErrorInit {
  kind: ActionsErrorKind;
  method: string;
  url: string;
  statusCode?: number;
  activityId?: string;
  requestId?: string;
  typeName?: string;
  /** The service's own message, or what the client found wrong with the response. */
  detail: string;
  cause?: unknown;
}

export class ActionsError extends Error {
  readonly kind: ActionsErrorKind;
  readonly statusCode?: number;
  /** The `ActivityId` response header of the Actions service, for support requests. */
  readonly activityId?: string;
  /** The `X-GitHub-Request-Id` response header of the GitHub REST API. */
  readonly requestId?: string;
  /** The exception type the service named in its error body. */
  readonly typeName?: string;
  readonly method: string;
  /** The request URL with credentials and token-like query values redacted. */
  readonly url: string;

  constructor(init: ActionsErrorInit) {
    const ids = [
      init.statusCode !== undefined ? `status=${init.statusCode}` : undefined,
      init.activityId ? `activity_id=${JSON.stringify(init.activityId)}` : undefined,
      init.requestId ? `github_request_id=${JSON.stringify(init.requestId)}` : undefined,
    ].filter((s): s is string => s !== undefined);
    const where = `${init.method} ${init.url}`;
    super(
      `request ${where} failed${ids.length ? ` (${ids.join(', ')})` : ''}: ${init.detail}`,
      init.cause !== undefined ? { cause: init.cause } : undefined,
    );
    this.name = 'ActionsError';
    this.kind = init.kind;
    this.statusCode = init.statusCode;
    this.activityId = init.activityId;
    this.requestId = init.requestId;
    this.typeName = init.typeName;
    this.method = init.method;
    this.url = init.url;
  }
}

export function isActionsError(e: unknown): e is ActionsError {
  return e instanceof ActionsError;
}

/** The ActionsError an error is or wraps (a caller may have added context around it), if any. */
export function actionsErrorOf(e: unknown, maxDepth = 6): ActionsError | undefined {
  for (let cur: unknown = e, depth = 0; cur && depth < maxDepth; depth++) {
    if (cur instanceof ActionsError) return cur;
    cur = (cur as { cause?: unknown }).cause;
  }
  return undefined;
}

function isKind(e: unknown, kind: ActionsErrorKind): boolean {
  return actionsErrorOf(e)?.kind === kind;
}

export function isRunnerExists(e: unknown): boolean {
  return isKind(e, 'RunnerExists');
}

export function isJobStillRunning(e: unknown): boolean {
  return isKind(e, 'JobStillRunning');
}

export function isRunnerNotFound(e: unknown): boolean {
  return isKind(e, 'RunnerNotFound');
}

/**
 * Any "it is not there" from the Actions service: RunnerNotFound, NotFound, or a bare 404. Named apart
 * from `@aro/kube`'s `isNotFound` (an apiserver 404), which callers use beside it.
 */
export function isActionsNotFound(e: unknown): boolean {
  const a = actionsErrorOf(e);
  return a !== undefined && (a.kind === 'NotFound' || a.kind === 'RunnerNotFound' || a.statusCode === 404);
}

export function isMessageQueueTokenExpired(e: unknown): boolean {
  return isKind(e, 'MessageQueueTokenExpired');
}

export function isSessionConflict(e: unknown): boolean {
  return isKind(e, 'SessionConflict');
}

export function isUnauthorized(e: unknown): boolean {
  return isKind(e, 'Unauthorized');
}

export function isSessionGone(e: unknown): boolean {
  return isKind(e, 'SessionGone');
}

export function isRateLimited(e: unknown): boolean {
  return isKind(e, 'RateLimited');
}

export function isTlsFailure(e: unknown): boolean {
  return isKind(e, 'TlsFailure');
}

export function isProxyFailure(e: unknown): boolean {
  return isKind(e, 'ProxyFailure');
}

/** The parts of a VSS exception body the client reads. */
export interface ServiceExceptionBody {
  typeName?: string;
  message?: string;
}

const exceptionKinds: Array<[string, ActionsErrorKind]> = [
  ['AgentExistsException', 'RunnerExists'],
  ['AgentNotFoundException', 'RunnerNotFound'],
  ['JobStillRunningException', 'JobStillRunning'],
  ['SessionConflictException', 'SessionConflict'],
  // The service answers a refresh or delete of a session it dropped with one of these (400).
  ['SessionExpiredException', 'SessionGone'],
  ['SessionDeletedException', 'SessionGone'],
  ['SessionNotFoundException', 'SessionGone'],
];

/**
 * The kind of a failed response. The exception type decides first (as in the Go client, where the
 * status is only printed); the status decides when the body names no known exception.
 * A 401 on the message queue means the session's queue token expired or was rotated, which the
 * listener answers by refreshing the session, not by re-authenticating.
 */
export function errorKindOf(
  statusCode: number,
  typeName: string | undefined,
  onMessageQueue: boolean,
): ActionsErrorKind {
  if (onMessageQueue && statusCode === 401) return 'MessageQueueTokenExpired';
  if (typeName) {
    for (const [fragment, kind] of exceptionKinds) {
      if (typeName.includes(fragment)) return kind;
    }
  }
  if (statusCode === 401 || statusCode === 403) return 'Unauthorized';
  if (statusCode === 404) return 'NotFound';
  // A plain-HTTP proxy (no CONNECT tunnel) answers for itself with 407 when it wants credentials.
  if (statusCode === 407) return 'ProxyFailure';
  if (statusCode === 429) return 'RateLimited';
  return 'Other';
}

const utf8Bom = Buffer.from([0xef, 0xbb, 0xbf]);

/** The Actions service sometimes prefixes JSON with a UTF-8 BOM, which JSON.parse rejects. */
export function stripBom(body: Buffer): Buffer {
  return body.subarray(0, 3).equals(utf8Bom) ? body.subarray(3) : body;
}

export interface FailedResponse {
  method: string;
  url: string;
  statusCode: number;
  statusText?: string;
  contentType?: string;
  activityId?: string;
  requestId?: string;
  body: Buffer;
  onMessageQueue: boolean;
}

const maxDetailBytes = 1024;

/** Builds the typed error for a response whose status was not the one the call expects. */
export function errorFromResponse(r: FailedResponse): ActionsError {
  const text = stripBom(r.body).toString('utf8').trim();
  let typeName: string | undefined;
  let detail: string;
  if (text === '') {
    detail = r.statusText ? `${r.statusText} (empty body)` : 'unknown error (empty body)';
  } else if (r.contentType?.includes('text/plain') || !looksLikeJson(text)) {
    detail = truncate(text);
  } else {
    const parsed = parseExceptionBody(text);
    typeName = parsed?.typeName || undefined;
    const message = parsed?.message;
    detail = typeName ? `${typeName}: ${message ?? ''}`.trim() : (message ?? truncate(text));
  }
  return new ActionsError({
    kind: errorKindOf(r.statusCode, typeName, r.onMessageQueue),
    method: r.method,
    url: r.url,
    statusCode: r.statusCode,
    activityId: r.activityId,
    requestId: r.requestId,
    typeName,
    detail,
  });
}

function looksLikeJson(text: string): boolean {
  return text.startsWith('{') || text.startsWith('[');
}

function parseExceptionBody(text: string): ServiceExceptionBody | undefined {
  try {
    const v: unknown = JSON.parse(text);
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
    const o = v as Record<string, unknown>;
    return {
      typeName: typeof o.typeName === 'string' ? o.typeName : undefined,
      // GitHub REST errors carry `message` too (`{"message":"Bad credentials"}`).
      message: typeof o.message === 'string' ? o.message : undefined,
    };
  } catch {
    return undefined;
  }
}

function truncate(text: string): string {
  return text.length > maxDetailBytes ? `${text.slice(0, maxDetailBytes)}...` : text;
}

const secretQueryKey = /token|sig|secret|key|code|password|auth/i;

/** A URL fit for logs and error messages: no user-info, no token-like query values. */
export function redactUrl(url: URL | string): string {
  let u: URL;
  try {
    u = new URL(typeof url === 'string' ? url : url.href);
  } catch {
    return '<invalid url>';
  }
  if (u.username || u.password) {
    u.username = 'redacted';
    u.password = '';
  }
  for (const key of [...u.searchParams.keys()]) {
    if (secretQueryKey.test(key)) u.searchParams.set(key, 'redacted');
  }
  return u.href;
}
