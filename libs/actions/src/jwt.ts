import { createPrivateKey, createSign, KeyObject } from 'node:crypto';

function base64url(data: Buffer | string): string {
  return Buffer.from(data).toString('base64url');
}

/**
 * The JWT a GitHub App presents to exchange for an installation token: RS256, issued 60 s in the
 * past so that a server clock slightly behind ours still accepts it, valid 9 minutes from then
 * (GitHub refuses anything over 10).
 */
export function createAppJwt(
  appId: string,
  privateKey: string | KeyObject,
  nowMs: number = Date.now(),
): string {
  const key = typeof privateKey === 'string' ? parsePrivateKey(privateKey) : privateKey;
  const iat = Math.floor(nowMs / 1000) - 60;
  const header = base64url(JSON.stringify({ alg: 'RS256', typ: 'JWT' }));
  const claims = base64url(JSON.stringify({ iat, exp: iat + 9 * 60, iss: appId }));
  const signingInput = `${header}.${claims}`;
  const signature = createSign('RSA-SHA256').update(signingInput).sign(key);
  return `${signingInput}.${base64url(signature)}`;
}

/** Parses a PEM private key (PKCS#1 as GitHub issues it, or PKCS#8), with an error that says what is wrong. */
export function parsePrivateKey(pem: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: pem, format: 'pem' });
  } catch (e) {
    throw new Error(`GitHub App private key is not a valid PEM private key: ${(e as Error).message}`, {
      cause: e,
    });
  }
  if (key.asymmetricKeyType !== 'rsa') {
    throw new Error(`GitHub App private key must be an RSA key, got ${key.asymmetricKeyType ?? 'unknown'}`);
  }
  return key;
}

/**
 * The `exp` claim (ms since epoch) of a JWT, read without checking the signature: the client only
 * needs to know when the Actions service will stop accepting the admin token, not whether to trust it.
 */
export function jwtExpiryMs(token: string): number {
  const parts = token.split('.');
  if (parts.length !== 3) throw new Error('admin token is not a JWT (expected three dot-separated parts)');
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
  } catch {
    throw new Error('admin token claims are not base64url-encoded JSON');
  }
  const exp = (claims as { exp?: unknown } | null)?.exp;
  if (typeof exp !== 'number' || !Number.isFinite(exp))
    throw new Error('admin token has no numeric exp claim');
  return exp * 1000;
}
