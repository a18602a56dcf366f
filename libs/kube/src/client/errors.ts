import type { ResourceKind } from '@aro/api/lean';
import type { V1Status } from '@kubernetes/client-node';

/** Which call failed, for the message: an operator reading a log needs the object, not just a code. */
export interface RequestContext {
  verb: string;
  kind: ResourceKind;
  namespace?: string;
  name?: string;
}

/*
 * The reason the apiserver would have sent for a code, for responses whose body is not a Status (a
 * proxy's 502, an HTML error page). Mirrors apimachinery's reasonForCode.
 */
const reasonByCode: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  409: 'Conflict',
  410: 'Gone',
  413: 'RequestEntityTooLarge',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

function describeTarget(ctx: RequestContext): string {
  const what = ctx.kind.group ? `${ctx.kind.kind}.${ctx.kind.group}` : ctx.kind.kind;
  if (ctx.name === undefined) return ctx.namespace ? `${what} in namespace ${ctx.namespace}` : what;
  return ctx.namespace ? `${what} ${ctx.namespace}/${ctx.name}` : `${what} ${ctx.name}`;
}

/** The API server answered with an error status. */
export class KubeApiError extends Error {
  override readonly name = 'KubeApiError';
  /** The server's Status.reason (`NotFound`, `AlreadyExists`, `Conflict`, `Invalid`, `Expired`, ...). */
  readonly reason: string;
  readonly verb: string;
  readonly kind: ResourceKind;
  readonly namespace?: string;
  readonly objectName?: string;

  constructor(
    readonly statusCode: number,
    ctx: RequestContext,
    readonly status?: V1Status,
    body?: string,
    /**
     * How long the server asked the client to wait before trying again (its Retry-After header, or the
     * Status's details.retryAfterSeconds), when it said.
     */
    readonly retryAfterSeconds?: number,
  ) {
    const reason = status?.reason || reasonByCode[statusCode] || 'Unknown';
    const detail = status?.message || body?.trim().slice(0, 500) || 'no message';
    super(`${ctx.verb} ${describeTarget(ctx)} failed: ${detail} (HTTP ${statusCode} ${reason})`);
    this.reason = reason;
    this.verb = ctx.verb;
    this.kind = ctx.kind;
    this.namespace = ctx.namespace;
    this.objectName = ctx.name;
  }
}

/**
 * How long the apiserver asked to wait before trying again, in ms, when `e` (or an error it wraps as its
 * cause) is a 429 that said; 0 otherwise.
 */
export function retryAfterMsOf(e: unknown): number {
  for (let cause = e, depth = 0; cause instanceof Error && depth < 5; cause = cause.cause, depth++) {
    if (cause instanceof KubeApiError && cause.statusCode === 429 && cause.retryAfterSeconds) {
      return cause.retryAfterSeconds * 1000;
    }
  }
  return 0;
}

/** The request never got an answer: connection refused or reset, TLS failure, or the request timeout. */
export class KubeTransportError extends Error {
  override readonly name = 'KubeTransportError';

  constructor(ctx: RequestContext, reason: string, options?: { cause?: unknown }) {
    super(`${ctx.verb} ${describeTarget(ctx)} failed: ${reason}`, options);
  }
}

/*
 * Compare reasons, not codes: 409 means both AlreadyExists and Conflict. A response without a Status
 * got its reason from the code in the constructor, as apimachinery does.
 */
function hasReason(e: unknown, reason: string): boolean {
  return e instanceof KubeApiError && e.reason === reason;
}

export function isNotFound(e: unknown): boolean {
  return hasReason(e, 'NotFound');
}

export function isAlreadyExists(e: unknown): boolean {
  return hasReason(e, 'AlreadyExists');
}

/** A write lost an optimistic-concurrency race, or a delete precondition (UID, resourceVersion) failed. */
export function isConflict(e: unknown): boolean {
  return hasReason(e, 'Conflict');
}

export function isInvalid(e: unknown): boolean {
  return hasReason(e, 'Invalid');
}

export function isForbidden(e: unknown): boolean {
  return hasReason(e, 'Forbidden');
}

/** The resourceVersion asked for is older than the server still holds (`Expired`, or `Gone`, HTTP 410). */
export function isGone(e: unknown): boolean {
  return e instanceof KubeApiError && (e.statusCode === 410 || e.reason === 'Expired' || e.reason === 'Gone');
}

/** The server's Status.message, e.g. `pods "x" is forbidden: exceeded quota: ...`. */
export function statusMessage(e: unknown): string | undefined {
  return e instanceof KubeApiError ? e.status?.message : undefined;
}

/** Swallows a not-found error and rethrows anything else: `catch (e) { ignoreNotFound(e); }`. */
export function ignoreNotFound(e: unknown): void {
  if (!isNotFound(e)) throw e;
}
