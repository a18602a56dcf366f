import type { KubeClient } from '@aro/kube';
import type { SecretResolver } from '@aro/secrets';
import { createTestNamespace } from '../../harness';
import {
  holderIn,
  newKubeClient,
  newResolver,
  putSecret,
  replaceSecretData,
  resolutionError,
  rsaPrivateKeyPem,
} from './support';

describe('SecretResolver.getCredentials against Secrets in the API server', () => {
  let kube: KubeClient;
  let resolver: SecretResolver;
  let ns: string;
  const privateKey = rsaPrivateKeyPem();

  beforeAll(async () => {
    kube = newKubeClient();
    resolver = newResolver(kube);
    ns = await createTestNamespace('secrets-credentials');
  });

  afterAll(() => kube.close());

  it('reads a PAT from github_token', async () => {
    await putSecret(kube, ns, 'pat', { github_token: 'ghp_integration\n' });
    await expect(resolver.getCredentials(holderIn(ns, { githubConfigSecret: 'pat' }))).resolves.toEqual({
      kind: 'pat',
      token: 'ghp_integration',
    });
  });

  it('reads GitHub App credentials, the private key byte for byte', async () => {
    await putSecret(kube, ns, 'app', {
      github_app_id: '424242',
      github_app_installation_id: '77',
      github_app_private_key: privateKey,
    });
    await expect(resolver.getCredentials(holderIn(ns, { githubConfigSecret: 'app' }))).resolves.toEqual({
      kind: 'app',
      appId: '424242',
      installationId: 77,
      privateKey,
    });
  });

  it('names the namespace, the Secret and the object when the Secret does not exist', async () => {
    const e = await resolutionError(
      resolver.getCredentials(holderIn(ns, { githubConfigSecret: 'nowhere', name: 'EphemeralRunner r-1' })),
    );
    expect(e).toMatchObject({ reason: 'SecretNotFound', namespace: ns, secretName: 'nowhere' });
    expect(e.message).toBe(
      `Secret ${ns}/nowhere: GitHub config Secret not found (referenced by EphemeralRunner r-1)`,
    );
  });

  it('refuses a Secret holding both a PAT and App keys, without leaking the token', async () => {
    await putSecret(kube, ns, 'both', { github_token: 'ghp_leakcheck', github_app_id: '1' });
    const e = await resolutionError(resolver.getCredentials(holderIn(ns, { githubConfigSecret: 'both' })));
    expect(e).toMatchObject({ reason: 'BothCredentialKinds', secretName: 'both' });
    expect(e.message).toContain('both PAT and GitHub App credentials provided');
    expect(e.message).not.toContain('ghp_leakcheck');
  });

  it('refuses a Secret with no credential keys', async () => {
    await putSecret(kube, ns, 'none', { something_else: 'x' });
    const e = await resolutionError(resolver.getCredentials(holderIn(ns, { githubConfigSecret: 'none' })));
    expect(e).toMatchObject({ reason: 'NoCredentials', secretName: 'none' });
  });

  it('names the App key that is missing', async () => {
    await putSecret(kube, ns, 'no-key', { github_app_id: '1', github_app_installation_id: '2' });
    const e = await resolutionError(resolver.getCredentials(holderIn(ns, { githubConfigSecret: 'no-key' })));
    expect(e).toMatchObject({ reason: 'KeyMissing', secretName: 'no-key', key: 'github_app_private_key' });
    expect(e.message).toContain(`Secret ${ns}/no-key key "github_app_private_key": missing`);
  });

  it('refuses an installation id that is not an integer', async () => {
    await putSecret(kube, ns, 'bad-installation', {
      github_app_id: '1',
      github_app_installation_id: 'twelve',
      github_app_private_key: privateKey,
    });
    const e = await resolutionError(
      resolver.getCredentials(holderIn(ns, { githubConfigSecret: 'bad-installation' })),
    );
    expect(e).toMatchObject({ reason: 'InvalidInstallationId', key: 'github_app_installation_id' });
  });

  it('refuses a private key that is not a PEM private key, without echoing it', async () => {
    const notAKey = '-----BEGIN RSA PRIVATE KEY-----\nbm90IGEga2V5\n-----END RSA PRIVATE KEY-----\n';
    await putSecret(kube, ns, 'bad-key', {
      github_app_id: '1',
      github_app_installation_id: '2',
      github_app_private_key: notAKey,
    });
    const e = await resolutionError(resolver.getCredentials(holderIn(ns, { githubConfigSecret: 'bad-key' })));
    expect(e).toMatchObject({ reason: 'InvalidPrivateKey', key: 'github_app_private_key' });
    expect(e.message).not.toContain('bm90IGEga2V5');
  });

  it('sees a rotated Secret on the next call, reading live rather than from a cache', async () => {
    await putSecret(kube, ns, 'rotating', { github_token: 'ghp_first' });
    const holder = holderIn(ns, { githubConfigSecret: 'rotating' });
    await expect(resolver.getCredentials(holder)).resolves.toEqual({ kind: 'pat', token: 'ghp_first' });
    await replaceSecretData(kube, ns, 'rotating', { github_token: 'ghp_second' });
    await expect(resolver.getCredentials(holder)).resolves.toEqual({ kind: 'pat', token: 'ghp_second' });
  });

  it('refuses a vault type no source handles, naming the type', async () => {
    const e = await resolutionError(
      resolver.getCredentials(
        holderIn(ns, { vaultConfig: { type: 'azure_key_vault' }, githubConfigSecret: 'gh-config-in-vault' }),
      ),
    );
    expect(e).toMatchObject({
      reason: 'NoCredentialSource',
      namespace: ns,
      secretName: 'gh-config-in-vault',
    });
    expect(e.message).toContain('no credential source handles vault type azure_key_vault');
    expect(e.message).toContain('registered sources: kubernetes-secret');
  });
});
