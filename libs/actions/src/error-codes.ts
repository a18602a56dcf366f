/**
 * Node's error codes and the client's own as the Actions client meets them, in one place: the retry policy asks
 * whether a failure can be fixed by retrying, and the controllers ask what a person must fix (a CA the
 * server's certificate does not chain to). Both read the same lists, so a code added for one is known
 * to the other.
 */

/** A TLS peer the client does not trust: no retry fixes these, a CA or a certificate does. */
export const certificateTrustCodes: ReadonlySet<string> = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** A TLS handshake that could not happen at all: a plain-HTTP server or a proxy in the way. */
const tlsHandshakeCodes: ReadonlySet<string> = new Set(['ERR_SSL_WRONG_VERSION_NUMBER', 'EPROTO']);

/** Every string `code` along an error's cause chain, outermost first. */
export function errorCodesOf(e: unknown, maxDepth = 6): string[] {
  const codes: string[] = [];
  for (let cur: unknown = e, depth = 0; cur && depth < maxDepth; depth++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === 'string') codes.push(code);
    cur = (cur as { cause?: unknown }).cause;
  }
  return codes;
}

/** The outermost error code, as the retry policy classifies it. */
export function errorCodeOf(e: unknown): string | undefined {
  return errorCodesOf(e, 4)[0];
}

/** True when TLS failed: an untrusted certificate or a handshake that could not happen. */
export function hasTlsFailureCode(e: unknown): boolean {
  return errorCodesOf(e).some((c) => certificateTrustCodes.has(c) || tlsHandshakeCodes.has(c));
}

/** The connection to the target (TCP, and TLS for https) was not up in time: nothing was sent. */
export const connectTimeoutCode = 'ARO_CONNECT_TIMEOUT';

/** The proxy answered CONNECT with a status other than 200 (`proxyStatus`), so nothing reached the target. */
export const proxyRefusedCode = 'ARO_PROXY_REFUSED';
/** No CONNECT answer came from the proxy at all: refused, unresolvable, reset, or its TLS failed. */
export const proxyUnreachableCode = 'ARO_PROXY_UNREACHABLE';

/**
 * A failure of the CONNECT tunnel to a proxy, raised by the proxy client itself (see dispatchers.ts),
 * so that it is known as the proxy's by where it happened, not by an error's wording.
 */
export class ProxyTunnelError extends Error {
  override readonly name = 'ProxyTunnelError';

  constructor(
    readonly code: typeof proxyRefusedCode | typeof proxyUnreachableCode,
    proxy: string,
    readonly proxyStatus?: number,
    options?: { cause?: unknown },
  ) {
    super(
      code === proxyRefusedCode
        ? `proxy ${proxy} answered CONNECT with ${proxyStatus}`
        : `proxy ${proxy} could not be reached`,
      options,
    );
  }
}

export function proxyTunnelErrorOf(e: unknown, maxDepth = 6): ProxyTunnelError | undefined {
  for (let cur: unknown = e, depth = 0; cur && depth < maxDepth; depth++) {
    if (cur instanceof ProxyTunnelError) return cur;
    cur = (cur as { cause?: unknown }).cause;
  }
  return undefined;
}
