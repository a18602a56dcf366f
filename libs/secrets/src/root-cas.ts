import { X509Certificate } from 'node:crypto';

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

export type CertificateBundle = { ok: true; certificates: string[] } | { ok: false; problem: string };

/**
 * Splits a PEM bundle (a ConfigMap key may hold a chain or several roots) into one string per
 * certificate, each checked to parse as X.509. Every block must parse: a bundle with one corrupt
 * entry is a broken ConfigMap, and trusting only the readable part would fail later, on the one
 * server whose root was corrupt, with a TLS error that names nothing.
 */
export function parseCertificateBundle(pem: string): CertificateBundle {
  const blocks = pem.match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) {
    return { ok: false, problem: 'holds no PEM certificate (no "-----BEGIN CERTIFICATE-----" block)' };
  }
  const certificates: string[] = [];
  for (const [index, block] of blocks.entries()) {
    try {
      // Normalising through the parser gives the same string for the same certificate, whatever the
      // line endings or indentation in the ConfigMap, so client caches keyed on the CAs stay stable.
      certificates.push(new X509Certificate(block).toString().trim());
    } catch {
      return {
        ok: false,
        problem: `certificate ${index + 1} of ${blocks.length} does not parse as X.509`,
      };
    }
  }
  return { ok: true, certificates };
}
