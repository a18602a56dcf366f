import { errorCodeOf, errorCodesOf, hasTlsFailureCode } from './error-codes';
import { classifyTransportError } from './retry';

function coded(code: string, cause?: unknown): Error {
  return Object.assign(new Error(code, { cause }), { code });
}

describe('error codes', () => {
  it('reads every code along the cause chain, outermost first', () => {
    const err = new Error('fetch failed', { cause: coded('UND_ERR_SOCKET', coded('ECONNRESET')) });
    expect(errorCodesOf(err)).toEqual(['UND_ERR_SOCKET', 'ECONNRESET']);
    expect(errorCodeOf(err)).toBe('UND_ERR_SOCKET');
  });

  it('knows a TLS failure wherever it sits in the chain, and nothing else as one', () => {
    expect(hasTlsFailureCode(new Error('fetch failed', { cause: coded('SELF_SIGNED_CERT_IN_CHAIN') }))).toBe(
      true,
    );
    expect(hasTlsFailureCode(coded('ERR_SSL_WRONG_VERSION_NUMBER'))).toBe(true);
    expect(hasTlsFailureCode(coded('ECONNREFUSED'))).toBe(false);
  });

  it('gives the retry policy the same certificate codes: an untrusted certificate is never retried', () => {
    expect(classifyTransportError(coded('UNABLE_TO_GET_ISSUER_CERT_LOCALLY'))).toBe('permanent');
  });
});
