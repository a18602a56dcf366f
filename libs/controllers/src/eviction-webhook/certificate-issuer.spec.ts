import { X509Certificate } from 'node:crypto';
import {
  type PemPair,
  inRenewalWindow,
  issueAuthority,
  issueServingCertificate,
  servingCertificateProblem,
} from './certificate-issuer';

const DAY_MS = 24 * 60 * 60 * 1000;
const HOSTS = ['webhook.aro-system.svc', 'webhook.aro-system.svc.cluster.local'];

describe('the eviction webhook certificate issuer', () => {
  const now = Date.parse('2026-12-01T00:00:00Z');
  let authority: PemPair;
  let serving: PemPair;

  beforeAll(async () => {
    authority = await issueAuthority('webhook-ca', 3650, now);
    serving = await issueServingCertificate(authority, { hosts: HOSTS, validityDays: 365, now });
  });

  it('issues a CA and a serving certificate for the hosts, signed by it', () => {
    const ca = new X509Certificate(authority.cert);
    const cert = new X509Certificate(serving.cert);
    expect(ca.ca).toBe(true);
    expect(cert.ca).toBe(false);
    expect(cert.checkIssued(ca) && cert.verify(ca.publicKey)).toBe(true);
    expect(cert.subjectAltName).toBe(HOSTS.map((h) => `DNS:${h}`).join(', '));
    expect(servingCertificateProblem(serving, authority.cert, HOSTS, now)).toBeUndefined();
  });

  it('says why a pair cannot be served: another CA, a missing host, a foreign key, its renewal window', async () => {
    const other = await issueAuthority('other-ca', 10, now);
    expect(servingCertificateProblem(serving, other.cert, HOSTS, now)).toBe(
      'no authority of the CA bundle signed it',
    );
    // A bundle holding the signer among others is enough (a CA rotation in progress).
    expect(servingCertificateProblem(serving, other.cert + authority.cert, HOSTS, now)).toBeUndefined();
    expect(servingCertificateProblem(serving, authority.cert, ['renamed.aro-system.svc'], now)).toBe(
      'it does not name renamed.aro-system.svc',
    );
    expect(
      servingCertificateProblem({ cert: serving.cert, key: other.key }, authority.cert, HOSTS, now),
    ).toBe('its key is not the certificate’s');
    expect(servingCertificateProblem(serving, authority.cert, HOSTS, now + 250 * DAY_MS)).toMatch(
      /^it expires /,
    );
    expect(servingCertificateProblem({ cert: 'garbage', key: '' }, authority.cert, HOSTS, now)).toMatch(
      /^it cannot be read/,
    );
  });

  it('renews with a third of the life left, not sooner', () => {
    const cert = new X509Certificate(serving.cert);
    expect(inRenewalWindow(cert, now + 200 * DAY_MS)).toBe(false);
    expect(inRenewalWindow(cert, now + 245 * DAY_MS)).toBe(true);
  });
});
