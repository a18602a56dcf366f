import { createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { createAppJwt, jwtExpiryMs, parsePrivateKey } from './jwt';

describe('GitHub App JWT', () => {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });

  it('is RS256, verifiable with the public key, issued 60 s back and valid 9 minutes from then', () => {
    const now = Date.parse('2026-05-05T17:00:00Z');
    const jwt = createAppJwt('12345', privateKey, now);
    const [h, c, s] = jwt.split('.');
    expect(JSON.parse(Buffer.from(h, 'base64url').toString())).toEqual({ alg: 'RS256', typ: 'JWT' });
    const claims = JSON.parse(Buffer.from(c, 'base64url').toString()) as Record<string, unknown>;
    expect(claims).toEqual({ iat: now / 1000 - 60, exp: now / 1000 - 60 + 540, iss: '12345' });
    expect(
      verify('RSA-SHA256', Buffer.from(`${h}.${c}`), createPublicKey(publicKey), Buffer.from(s, 'base64url')),
    ).toBe(true);
    expect(jwtExpiryMs(jwt)).toBe((now / 1000 + 480) * 1000);
  });

  it('accepts a client id as issuer', () => {
    const jwt = createAppJwt('Iv1.abcdef', privateKey);
    const claims = JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString()) as { iss: string };
    expect(claims.iss).toBe('Iv1.abcdef');
  });

  it('rejects a key that is not a PEM RSA private key', () => {
    expect(() => parsePrivateKey('not a key')).toThrow(/not a valid PEM private key/);
    const ec = generateKeyPairSync('ec', {
      namedCurve: 'P-256',
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      publicKeyEncoding: { type: 'spki', format: 'pem' },
    });
    expect(() => parsePrivateKey(ec.privateKey)).toThrow(/must be an RSA key, got ec/);
  });

  it('reads exp of an admin token without checking its signature, and says when it cannot', () => {
    const token = ['x', Buffer.from(JSON.stringify({ exp: 1700000000 })).toString('base64url'), 'sig'].join(
      '.',
    );
    expect(jwtExpiryMs(token)).toBe(1700000000000);
    expect(() => jwtExpiryMs('abc')).toThrow(/not a JWT/);
    expect(() => jwtExpiryMs(['x', Buffer.from('{}').toString('base64url'), 'y'].join('.'))).toThrow(
      /no numeric exp/,
    );
  });
});
