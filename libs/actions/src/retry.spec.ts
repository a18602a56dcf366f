import { ProxyTunnelError, proxyRefusedCode, proxyUnreachableCode } from './error-codes';
import {
  backoffMs,
  classifyTransportError,
  parseRetryAfterMs,
  resolveRetryOptions,
  retryWaitMs,
  shouldRetryStatus,
} from './retry';

describe('retry policy', () => {
  const o = resolveRetryOptions({});

  it('defaults to 4 retries between 1 s and 30 s, as go-retryablehttp', () => {
    expect(o).toEqual({ maxRetries: 4, minWaitMs: 1000, maxWaitMs: 30_000 });
  });

  it('backs off 1-2-4-8 s, capped, with at most 25 % jitter', () => {
    expect([0, 1, 2, 3].map((n) => backoffMs(n, o, () => 0))).toEqual([1000, 2000, 4000, 8000]);
    expect(backoffMs(3, o, () => 1)).toBe(10_000);
    expect(backoffMs(10, o, () => 1)).toBe(30_000);
  });

  it('retries any call on 429 and 503, which a server sends instead of acting', () => {
    for (const repeat of ['idempotent', 'once'] as const) {
      expect(shouldRetryStatus(429, repeat)).toBe(true);
      expect(shouldRetryStatus(503, repeat)).toBe(true);
    }
  });

  it('retries other 5xx but 501 only for idempotent calls', () => {
    expect(shouldRetryStatus(500, 'idempotent')).toBe(true);
    expect(shouldRetryStatus(502, 'idempotent')).toBe(true);
    expect(shouldRetryStatus(501, 'idempotent')).toBe(false);
    expect(shouldRetryStatus(500, 'once')).toBe(false);
    expect(shouldRetryStatus(504, 'once')).toBe(false);
  });

  it('does not retry 4xx unless the call asks for it', () => {
    expect(shouldRetryStatus(401, 'idempotent')).toBe(false);
    expect(shouldRetryStatus(401, 'idempotent', [401, 403])).toBe(true);
    expect(shouldRetryStatus(404, 'idempotent', [401, 403])).toBe(false);
  });

  it('honours Retry-After in seconds or as a date on 429/503, capped at maxWaitMs', () => {
    const now = Date.parse('2026-05-05T17:00:00Z');
    expect(parseRetryAfterMs('3')).toBe(3000);
    expect(parseRetryAfterMs('Tue, 05 May 2026 17:00:05 GMT', now)).toBe(5000);
    expect(parseRetryAfterMs('soon')).toBeUndefined();
    expect(retryWaitMs(0, 429, '3', o, () => 0)).toBe(3000);
    expect(retryWaitMs(0, 503, '3600', o, () => 0)).toBe(30_000);
    // On a 500 the header is not a promise the server made; backoff applies.
    expect(retryWaitMs(0, 500, '3', o, () => 0)).toBe(1000);
  });

  it('classifies connection failures by whether the request could have reached the server', () => {
    const err = (code: string) => Object.assign(new Error(code), { code });
    expect(classifyTransportError(err('ECONNREFUSED'))).toBe('not-sent');
    expect(classifyTransportError(err('UND_ERR_CONNECT_TIMEOUT'))).toBe('not-sent');
    expect(classifyTransportError(new ProxyTunnelError(proxyRefusedCode, 'proxy:3128', 502))).toBe(
      'not-sent',
    );
    expect(classifyTransportError(new ProxyTunnelError(proxyRefusedCode, 'proxy:3128', 407))).toBe(
      'permanent',
    );
    expect(
      classifyTransportError(
        new ProxyTunnelError(proxyUnreachableCode, 'proxy:3128', undefined, { cause: err('ECONNREFUSED') }),
      ),
    ).toBe('not-sent');
    expect(classifyTransportError(err('ECONNRESET'))).toBe('maybe-sent');
    expect(classifyTransportError(err('UND_ERR_SOCKET'))).toBe('maybe-sent');
    expect(classifyTransportError(new Error('x', { cause: err('SELF_SIGNED_CERT_IN_CHAIN') }))).toBe(
      'permanent',
    );
  });

  it('rejects retry options that cannot work', () => {
    expect(() => resolveRetryOptions({ minWaitMs: 10, maxWaitMs: 5 })).toThrow(/invalid retry options/);
    expect(() => resolveRetryOptions({ maxRetries: -1 })).toThrow(/invalid retry options/);
  });
});
