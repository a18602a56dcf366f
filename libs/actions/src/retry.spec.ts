import { InvalidConfigUrlError } from './config-url';
import { ProxyTunnelError, proxyRefusedCode, proxyUnreachableCode } from './error-codes';
import { ActionsError } from './errors';
import {
  type Repeatability,
  backoffMs,
  classifyTransportError,
  isRetryable,
  parseRetryAfterMs,
  resolveRetryOptions,
  retryDecision,
} from './retry';

describe('retry policy', () => {
  const o = resolveRetryOptions({});
  const shouldRetryStatus = (status: number, repeat: Repeatability, extra?: readonly number[]) =>
    retryDecision({ status }, { repeat, extraRetryStatuses: extra }, 0, o).retry;
  const retryWaitMs = (
    retries: number,
    status: number,
    retryAfter: string,
    _o: unknown,
    random: () => number,
  ) => {
    const decision = retryDecision({ status, retryAfter }, { repeat: 'idempotent' }, retries, o, random);
    return decision.retry ? decision.waitMs : undefined;
  };

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
    expect(classifyTransportError(err('ARO_CONNECT_TIMEOUT'))).toBe('not-sent');
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

  it('retries a connection failure by how far it got, and nothing once the retries are spent', () => {
    const refused = Object.assign(new Error('refused'), { code: 'ECONNREFUSED' });
    const reset = Object.assign(new Error('reset'), { code: 'ECONNRESET' });
    expect(retryDecision({ error: refused }, { repeat: 'once' }, 0, o, () => 0)).toEqual({
      retry: true,
      waitMs: 1000,
    });
    expect(retryDecision({ error: reset }, { repeat: 'once' }, 0, o)).toEqual({
      retry: false,
      failure: 'maybe-sent',
    });
    expect(retryDecision({ error: refused }, { repeat: 'idempotent' }, 4, o)).toEqual({
      retry: false,
      failure: 'not-sent',
    });
    expect(retryDecision({ status: 503 }, { repeat: 'idempotent' }, 4, o)).toEqual({ retry: false });
  });

  it('says whether an error a client threw is worth asking again, by the same rules', () => {
    const failed = (statusCode: number) =>
      new ActionsError({ kind: 'Other', method: 'POST', url: 'https://x', statusCode, detail: 'x' });
    expect(isRetryable(failed(500))).toBe(true);
    expect(isRetryable(failed(429))).toBe(true);
    expect(isRetryable(failed(400))).toBe(false);
    expect(isRetryable(new Error('wrapped', { cause: failed(403) }))).toBe(false);
    const untrusted = Object.assign(new Error('x'), { code: 'SELF_SIGNED_CERT_IN_CHAIN' });
    expect(isRetryable(untrusted)).toBe(false);
    expect(isRetryable(Object.assign(new Error('x'), { code: 'ECONNRESET' }))).toBe(true);
    expect(isRetryable(new InvalidConfigUrlError('nope', 'not an absolute URL'))).toBe(false);
  });

  it('rejects retry options that cannot work', () => {
    expect(() => resolveRetryOptions({ minWaitMs: 10, maxWaitMs: 5 })).toThrow(/invalid retry options/);
    expect(() => resolveRetryOptions({ maxRetries: -1 })).toThrow(/invalid retry options/);
  });
});
