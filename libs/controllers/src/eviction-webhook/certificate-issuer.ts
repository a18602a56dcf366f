import {
  type KeyObject,
  X509Certificate,
  constants,
  createPrivateKey,
  generateKeyPair,
  privateEncrypt,
  randomBytes,
} from 'node:crypto';
import { promisify } from 'node:util';
import type Forge from 'node-forge';

/*
 * The eviction webhook's own certificate authority and serving certificate. Node's crypto makes keys
 * and reads certificates but cannot build one, so node-forge (pinned, README "Why these pins") builds
 * the X.509 structure and its digest; every RSA operation is Node's: the keys are made in the thread
 * pool and the signature natively (`rsaSigner`), rather than in forge's big-integer JavaScript, which
 * takes seconds to make a key and 25-50 ms per signature on the event loop, and 1.4-2 s per signature
 * inside Jest's vm context, where each global lookup of its inner loop is slow (that made the unit
 * spec's hook overrun its bound on a loaded machine: docs/testing.md).
 */

/**
 * node-forge is about 40 modules and 10 MiB once loaded; most controllers never run the webhook, so it
 * is loaded on the first certificate, not at start-up (the controller's start and idle memory: docs/performance.md).
 */
let forgeModule: Promise<typeof Forge> | undefined;
function loadForge(): Promise<typeof Forge> {
  forgeModule ??= import('node-forge').then((m) => m.default);
  return forgeModule;
}

const DAY_MS = 24 * 60 * 60 * 1000;
/** Certificates are dated this much in the past: a node whose clock is a little behind still accepts them. */
const BACKDATE_MS = 60 * 60 * 1000;

export interface PemPair {
  cert: string;
  key: string;
}

export interface IssueOptions {
  /** DNS names the API server dials: `<service>.<namespace>.svc` and its longer forms. */
  hosts: readonly string[];
  /** Validity of the serving certificate; the authority lives ten times longer. */
  validityDays: number;
  now: number;
}

/** A new self-signed authority, named after the webhook's first host. */
export async function issueAuthority(
  commonName: string,
  validityDays: number,
  now: number,
): Promise<PemPair> {
  const forge = await loadForge();
  const keys = await rsaKeyPair(forge);
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = serialNumber();
  cert.validity.notBefore = new Date(now - BACKDATE_MS);
  cert.validity.notAfter = new Date(now + validityDays * DAY_MS);
  const subject = [{ name: 'commonName', value: commonName }];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  signWith(forge, cert, keys.privateKey);
  return { cert: forge.pki.certificateToPem(cert), key: privateKeyPem(keys.privateKey) };
}

/** A serving certificate for `hosts`, signed by `authority`. */
export async function issueServingCertificate(authority: PemPair, options: IssueOptions): Promise<PemPair> {
  if (options.hosts.length === 0) throw new Error('a serving certificate needs at least one host name');
  const forge = await loadForge();
  const caCert = forge.pki.certificateFromPem(authority.cert);
  const caKey = createPrivateKey(authority.key);
  const keys = await rsaKeyPair(forge);
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = serialNumber();
  cert.validity.notBefore = new Date(options.now - BACKDATE_MS);
  cert.validity.notAfter = new Date(options.now + options.validityDays * DAY_MS);
  cert.setSubject([{ name: 'commonName', value: options.hosts[0] }]);
  cert.setIssuer(caCert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    // The API server checks the name it dials against these, never the common name.
    { name: 'subjectAltName', altNames: options.hosts.map((value) => ({ type: 2, value })) },
  ]);
  signWith(forge, cert, caKey);
  return { cert: forge.pki.certificateToPem(cert), key: privateKeyPem(keys.privateKey) };
}

/** Each certificate of a PEM bundle, in order. */
export function certificatesOf(bundle: string): X509Certificate[] {
  const blocks = bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  return blocks.map((block) => new X509Certificate(block));
}

/**
 * Why `serving` cannot be served as it is at `now` (signed by none of `bundle`'s authorities, a host
 * missing, inside its renewal window), or undefined when it can. Renewal starts when a third of its
 * life is left, so a replica that reads the Secret only every refresh interval never serves an
 * expired certificate.
 */
export function servingCertificateProblem(
  serving: PemPair,
  bundle: string,
  hosts: readonly string[],
  now: number,
): string | undefined {
  let cert: X509Certificate;
  let authorities: X509Certificate[];
  try {
    cert = new X509Certificate(serving.cert);
    authorities = certificatesOf(bundle);
  } catch (err) {
    return `it cannot be read (${(err as Error).message})`;
  }
  if (!authorities.some((ca) => cert.checkIssued(ca) && cert.verify(ca.publicKey))) {
    return 'no authority of the CA bundle signed it';
  }
  const names = (cert.subjectAltName ?? '').split(', ');
  const missing = hosts.filter((host) => !names.includes(`DNS:${host}`));
  if (missing.length > 0) return `it does not name ${missing.join(', ')}`;
  if (!keyMatches(serving)) return 'its key is not the certificate’s';
  if (inRenewalWindow(cert, now)) return `it expires ${cert.validTo}`;
  return undefined;
}

/** True within the last third of the certificate's life (or outside its validity). */
export function inRenewalWindow(cert: X509Certificate, now: number): boolean {
  const from = Date.parse(cert.validFrom);
  const to = Date.parse(cert.validTo);
  return now < from || now >= to - (to - from) / 3;
}

function keyMatches(pair: PemPair): boolean {
  try {
    return new X509Certificate(pair.cert).checkPrivateKey(createPrivateKey(pair.key));
  } catch {
    return false;
  }
}

const generateRsaKeyPair = promisify(generateKeyPair);

/** Off the event loop: a renewal must not stall the reviews and reconciles of a busy controller. */
async function rsaKeyPair(
  forge: typeof Forge,
): Promise<{ publicKey: Forge.pki.rsa.PublicKey; privateKey: KeyObject }> {
  const { publicKey, privateKey } = await generateRsaKeyPair('rsa', { modulusLength: 2048 });
  // forge needs the public key as its own object to write the SubjectPublicKeyInfo; reading it does
  // no big-integer arithmetic beyond decoding the modulus.
  const publicPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  return { publicKey: forge.pki.publicKeyFromPem(publicPem) as Forge.pki.rsa.PublicKey, privateKey };
}

/** PKCS#1 (`RSA PRIVATE KEY`), the form the webhook's Secrets have always held. */
function privateKeyPem(key: KeyObject): string {
  return key.export({ type: 'pkcs1', format: 'pem' }).toString();
}

/**
 * RFC 8017 section 9.2, note 1: the DER DigestInfo of a SHA-256 digest is this prefix and the 32-byte
 * digest; padded with EMSA-PKCS1-v1_5 and raised to the private exponent, it is the sha256WithRSA
 * signature an X.509 verifier checks.
 */
const SHA256_DIGEST_INFO_PREFIX = Buffer.from('3031300d060960864801650304020105000420', 'hex');

/**
 * Signs `cert` with SHA-256 and RSA: forge writes the TBSCertificate and digests it, then hands the
 * digest to the key's `sign`, the one step done here by Node (privateEncrypt with PKCS#1 v1.5 padding
 * is RSASSA-PKCS1-v1_5 on a DigestInfo). forge's type asks for its own private key; only `sign` is read.
 */
function signWith(forge: typeof Forge, cert: Forge.pki.Certificate, key: KeyObject): void {
  const rsaSigner = {
    sign: (md: Forge.md.MessageDigest): string => {
      const digest = Buffer.from(md.digest().getBytes(), 'binary');
      const digestInfo = Buffer.concat([SHA256_DIGEST_INFO_PREFIX, digest]);
      return privateEncrypt({ key, padding: constants.RSA_PKCS1_PADDING }, digestInfo).toString('binary');
    },
  };
  cert.sign(rsaSigner as unknown as Forge.pki.rsa.PrivateKey, forge.md.sha256.create());
}

/** A positive 128-bit serial (the leading byte's top bit clear, so DER reads it as positive). */
function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] &= 0x7f;
  return bytes.toString('hex');
}
