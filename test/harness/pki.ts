// Certificates come from the `openssl` CLI rather than an npm library: Node's crypto can make key pairs
// but not X.509 certificates, openssl is a Debian package that is already on every machine we run on
// (.ci/run installs it if missing), and a new npm dependency would be one more thing to audit and pin
// for what is four short commands. OpenSSL 3's `req -x509 -CA` signs a fresh key in one call (~10 ms).
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Short-lived on purpose: a control plane lives for one test run or one debugging session. */
const VALIDITY_DAYS = '7';

// openssl's default config would add `v3_ca` extensions (CA:TRUE) to every `req -x509` certificate,
// leaves included; an empty config leaves exactly the extensions asked for with -addext.
const MINIMAL_CONFIG = '[req]\ndistinguished_name = dn\n[dn]\n';

export interface KeyAndCertificate {
  certPath: string;
  keyPath: string;
}

export interface PemKeyAndCertificate {
  certPem: string;
  keyPem: string;
}

async function openssl(args: readonly string[], what: string): Promise<void> {
  try {
    await run('openssl', args, { timeout: 30_000 });
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr ?? '';
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      throw new Error(
        `Cannot create ${what}: the openssl command is not installed (apt-get install openssl)`,
        { cause: err },
      );
    }
    throw new Error(`openssl failed to create ${what}: ${stderr.trim() || String(err)}`, { cause: err });
  }
}

async function configFile(dir: string): Promise<string> {
  const path = join(dir, 'openssl-minimal.cnf');
  await writeFile(path, MINIMAL_CONFIG);
  return path;
}

/** Escapes a value for openssl's `-subj /O=.../CN=...` syntax, where `/`, `+` and `\` are special. */
function subjectValue(value: string): string {
  return value.replace(/[\\/+]/g, (c) => `\\${c}`);
}

/** Creates a self-signed CA (EC P-256) as `<dir>/<name>.crt` and `<dir>/<name>.key`. */
export async function createCertificateAuthority(
  dir: string,
  name: string,
  commonName: string,
): Promise<KeyAndCertificate> {
  const out = { certPath: join(dir, `${name}.crt`), keyPath: join(dir, `${name}.key`) };
  await openssl(
    [
      'req',
      '-x509',
      '-new',
      '-nodes',
      '-config',
      await configFile(dir),
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-keyout',
      out.keyPath,
      '-out',
      out.certPath,
      '-days',
      VALIDITY_DAYS,
      '-subj',
      `/CN=${subjectValue(commonName)}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
    `the CA ${commonName}`,
  );
  return out;
}

interface LeafOptions {
  commonName: string;
  organizations?: readonly string[];
  extendedKeyUsage: 'serverAuth' | 'clientAuth';
  subjectAltNames?: readonly string[];
}

async function issueLeaf(
  ca: KeyAndCertificate,
  out: KeyAndCertificate,
  dir: string,
  leaf: LeafOptions,
): Promise<void> {
  const subject =
    (leaf.organizations ?? []).map((o) => `/O=${subjectValue(o)}`).join('') +
    `/CN=${subjectValue(leaf.commonName)}`;
  const args = [
    'req',
    '-x509',
    '-new',
    '-nodes',
    '-config',
    await configFile(dir),
    '-CA',
    ca.certPath,
    '-CAkey',
    ca.keyPath,
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-keyout',
    out.keyPath,
    '-out',
    out.certPath,
    '-days',
    VALIDITY_DAYS,
    '-subj',
    subject,
    '-addext',
    'basicConstraints=critical,CA:FALSE',
    '-addext',
    'keyUsage=critical,digitalSignature,keyEncipherment',
    '-addext',
    `extendedKeyUsage=${leaf.extendedKeyUsage}`,
  ];
  if (leaf.subjectAltNames && leaf.subjectAltNames.length > 0) {
    args.push('-addext', `subjectAltName=${leaf.subjectAltNames.join(',')}`);
  }
  await openssl(args, `the certificate for ${leaf.commonName}`);
}

/**
 * A serving certificate for the apiserver on loopback: SANs 127.0.0.1 and localhost, plus `extraIps`
 * (the real node reaches it at the `kubernetes` Service IP).
 */
export async function issueServingCertificate(
  ca: KeyAndCertificate,
  dir: string,
  name: string,
  extraIps: readonly string[] = [],
): Promise<KeyAndCertificate> {
  const out = { certPath: join(dir, `${name}.crt`), keyPath: join(dir, `${name}.key`) };
  await issueLeaf(ca, out, dir, {
    commonName: 'kube-apiserver',
    extendedKeyUsage: 'serverAuth',
    subjectAltNames: ['IP:127.0.0.1', 'DNS:localhost', ...extraIps.map((ip) => `IP:${ip}`)],
  });
  return out;
}

/**
 * A client certificate the apiserver maps to user `user` in `groups` (CN is the user name, each O a group),
 * which is how kube-apiserver's x509 authenticator reads client certificates.
 */
export async function issueClientCertificate(
  ca: KeyAndCertificate,
  dir: string,
  name: string,
  user: string,
  groups: readonly string[],
): Promise<KeyAndCertificate> {
  const out = { certPath: join(dir, `${name}.crt`), keyPath: join(dir, `${name}.key`) };
  await issueLeaf(ca, out, dir, {
    commonName: user,
    organizations: groups,
    extendedKeyUsage: 'clientAuth',
  });
  return out;
}

/** Like issueClientCertificate, but returns the PEM text and leaves no file behind. */
export async function issueClientCertificatePem(
  ca: KeyAndCertificate,
  user: string,
  groups: readonly string[],
): Promise<PemKeyAndCertificate> {
  const dir = await mkdtemp(join(tmpdir(), 'aro-user-cert-'));
  try {
    const files = await issueClientCertificate(ca, dir, 'user', user, groups);
    return { certPem: await readFile(files.certPath, 'utf8'), keyPem: await readFile(files.keyPath, 'utf8') };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The service-account token key pair. No certificate is needed: the apiserver takes a plain public key
 * for `--service-account-key-file` and a private key for `--service-account-signing-key-file`.
 */
export async function createServiceAccountKeyPair(
  dir: string,
): Promise<{ publicKeyPath: string; privateKeyPath: string }> {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const out = { publicKeyPath: join(dir, 'sa.pub'), privateKeyPath: join(dir, 'sa.key') };
  await writeFile(out.publicKeyPath, publicKey);
  await writeFile(out.privateKeyPath, privateKey, { mode: 0o600 });
  return out;
}
