import { createHmac, createPublicKey, createVerify, KeyObject, timingSafeEqual } from 'node:crypto';

export interface JwtParts {
  header: Record<string, unknown>;
  claims: Record<string, unknown>;
  signingInput: string;
  signature: Buffer;
}

function base64url(input: string | Buffer): string {
  return Buffer.from(input).toString('base64url');
}

export function decodeJwt(token: string): JwtParts | null {
  const parts = token.split('.');
  if (parts.length !== 3 || parts.some((p) => p.length === 0)) return null;
  try {
    const header = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8')) as unknown;
    const claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) as unknown;
    if (!isRecord(header) || !isRecord(claims)) return null;
    return {
      header,
      claims,
      signingInput: `${parts[0]}.${parts[1]}`,
      signature: Buffer.from(parts[2], 'base64url'),
    };
  } catch {
    return null;
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Admin tokens only need to be well-formed JWTs with a numeric `exp` (clients read it without
 * verifying), and the simulator validates them by lookup, so an HMAC key is enough and avoids an RSA
 * key generation on every simulator start.
 */
export function signHs256(claims: Record<string, unknown>, secret: Buffer): string {
  const head = base64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
  const body = base64url(JSON.stringify(claims));
  const sig = createHmac('sha256', secret).update(`${head}.${body}`).digest();
  return `${head}.${body}.${base64url(sig)}`;
}

export function verifyHs256(token: string, secret: Buffer): boolean {
  const jwt = decodeJwt(token);
  if (!jwt || jwt.header.alg !== 'HS256') return false;
  const expected = createHmac('sha256', secret).update(jwt.signingInput).digest();
  return expected.length === jwt.signature.length && timingSafeEqual(expected, jwt.signature);
}

export function publicKeyFromPem(pem: string): KeyObject {
  return createPublicKey(pem);
}

export function verifyRs256(jwt: JwtParts, key: KeyObject): boolean {
  if (jwt.header.alg !== 'RS256') return false;
  const verifier = createVerify('RSA-SHA256');
  verifier.update(jwt.signingInput);
  return verifier.verify(key, jwt.signature);
}
