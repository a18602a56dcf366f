import { parseCertificateBundle } from './root-cas';
import { TEST_CA_A, TEST_CA_B } from './testing/certificates';

describe('parseCertificateBundle', () => {
  it('returns one PEM per certificate of a bundle', () => {
    const result = parseCertificateBundle(`${TEST_CA_A}\n${TEST_CA_B}\n`);
    expect(result).toEqual({ ok: true, certificates: [TEST_CA_A.trim(), TEST_CA_B.trim()] });
  });

  it('gives the same strings whatever the line endings, so caches keyed on CAs stay stable', () => {
    const crlf = parseCertificateBundle(TEST_CA_A.replace(/\n/g, '\r\n'));
    expect(crlf).toEqual(parseCertificateBundle(TEST_CA_A));
  });

  it('refuses text with no certificate block', () => {
    const result = parseCertificateBundle('hello');
    expect(result.ok).toBe(false);
    expect(!result.ok && result.problem).toContain('no PEM certificate');
  });

  it('refuses a bundle with one corrupt certificate, saying which', () => {
    const corrupt = TEST_CA_B.replace(/\n[A-Za-z0-9+/]{20}/, '\nAAAAAAAAAAAAAAAAAAAA');
    const result = parseCertificateBundle(`${TEST_CA_A}\n${corrupt}`);
    expect(result).toEqual({ ok: false, problem: 'certificate 2 of 2 does not parse as X.509' });
  });
});
