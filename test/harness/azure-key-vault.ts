// The Key Vault and Entra ID stand-in of the simulator, served over TLS with a CA made for the test,
// and an app registration whose certificate (RSA, as Entra takes for client assertions) is written
// where a vaultConfig's certificatePath can point.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { AzureKeyVaultConfig } from '@aro/api';
import { KeyVaultStandIn } from '../../apps/simulator/src';
import { createCertificateAuthority, issueServingCertificate } from './pki';

const run = promisify(execFile);

export const TEST_TENANT_ID = '72f988bf-86f1-41af-91ab-2d7cd011db47';
export const TEST_CLIENT_ID = 'b3a1c0de-0000-4000-8000-00000000a120';

export interface KeyVaultFixture {
  standIn: KeyVaultStandIn;
  /** The CA that signed the stand-in's serving certificate (PEM): what the client must trust. */
  caPem: string;
  /** The same CA as a file (AZURE_KEY_VAULT_CA_FILE of the controller). */
  caFile: string;
  /** certificate + private key (PEM) of the registered app, at this path. */
  appCertificatePath: string;
  /** A second certificate, not registered anywhere. */
  strangerCertificatePath: string;
  /** The `vaultConfig.azureKeyVault` naming this vault and the registered app. */
  config: AzureKeyVaultConfig;
  close(): Promise<void>;
}

async function selfSignedRsa(dir: string, name: string): Promise<string> {
  const key = join(dir, `${name}.key`);
  const cert = join(dir, `${name}.crt`);
  await run(
    'openssl',
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '2'].concat([
      '-subj',
      `/CN=${name}`,
    ]),
    { timeout: 30_000 },
  );
  const pem = join(dir, `${name}.pem`);
  await writeFile(pem, `${await readFile(cert, 'utf8')}${await readFile(key, 'utf8')}`, { mode: 0o600 });
  return pem;
}

/** Starts the stand-in with one app registration (TEST_TENANT_ID / TEST_CLIENT_ID). */
export async function startKeyVault(): Promise<KeyVaultFixture> {
  const dir = await mkdtemp(join(tmpdir(), 'aro-key-vault-'));
  const ca = await createCertificateAuthority(dir, 'ca', 'ARO test Key Vault CA');
  const serving = await issueServingCertificate(ca, dir, 'vault');
  const [appCertificatePath, strangerCertificatePath] = await Promise.all([
    selfSignedRsa(dir, 'aro-app'),
    selfSignedRsa(dir, 'stranger'),
  ]);
  const standIn = await new KeyVaultStandIn({
    tls: { cert: await readFile(serving.certPath, 'utf8'), key: await readFile(serving.keyPath, 'utf8') },
  }).start();
  standIn.registerApp(TEST_TENANT_ID, TEST_CLIENT_ID, await readFile(appCertificatePath, 'utf8'));
  return {
    standIn,
    caPem: await readFile(ca.certPath, 'utf8'),
    caFile: ca.certPath,
    appCertificatePath,
    strangerCertificatePath,
    config: {
      url: standIn.url,
      tenantId: TEST_TENANT_ID,
      clientId: TEST_CLIENT_ID,
      certificatePath: appCertificatePath,
    },
    close: async () => {
      await standIn.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
