import { execFile } from 'node:child_process';
import { copyFile, rm } from 'node:fs/promises';
import { promisify } from 'node:util';
import type { KubeClient } from '@aro/kube';
import { silentLogger } from '@aro/observability';
import {
  AzureKeyVaultOptions,
  AzureKeyVaultSource,
  GitHubConfigHolder,
  KubernetesSecretSource,
  SecretResolutionError,
  SecretResolver,
  VaultUnavailableError,
} from '@aro/secrets';
import type { KeyVaultOutageAnswer, KeyVaultOutageTarget } from '../../../apps/simulator/src';
import { createTestNamespace } from '../../harness';
import { KeyVaultFixture, startKeyVault } from '../../harness/azure-key-vault';
import { ConnectProxy, startConnectProxy } from '../actions/support';
import {
  holderIn,
  newKubeClient,
  newMultiClient,
  putSecret,
  resolutionError,
  rsaPrivateKeyPem,
} from './support';

const PAT = 'ghp_from_the_vault_0123456789';

/**
 * The built-in Azure Key Vault source against the simulator's stand-in of Key Vault and Entra ID: the
 * SDK's real flow (an unauthenticated read answered by a bearer challenge, a token for the challenge's
 * tenant and resource from a certificate-signed assertion, the read again), over TLS with a CA the
 * test trusts, and every way it goes wrong named on the error.
 */
describe('AzureKeyVaultSource against the Key Vault stand-in', () => {
  let vault: KeyVaultFixture;
  let kube: KubeClient;
  let ns: string;
  let proxy: ConnectProxy;
  // The stand-in answers on 127.0.0.1, not a *.vault.azure.net name its challenge resource would match.
  const reachStandIn = (): AzureKeyVaultOptions => ({
    authorityHost: vault.standIn.url,
    disableInstanceDiscovery: true,
    disableChallengeResourceVerification: true,
    caCertificates: [vault.caPem],
    maxRetries: 0,
  });
  const resolverWith = (options: AzureKeyVaultOptions, timeoutMs = 20_000) =>
    new SecretResolver({
      kube,
      multiClient: newMultiClient(),
      logger: silentLogger,
      timeoutMs,
      sources: [new AzureKeyVaultSource(kube, options), new KubernetesSecretSource(kube)],
    });
  const holder = (overrides: Partial<GitHubConfigHolder> = {}): GitHubConfigHolder =>
    holderIn(ns, {
      githubConfigSecret: 'gh-config',
      vaultConfig: { type: 'azure_key_vault', azureKeyVault: vault.config },
      ...overrides,
    });

  beforeAll(async () => {
    vault = await startKeyVault();
    kube = newKubeClient();
    ns = await createTestNamespace('secrets-akv');
    proxy = await startConnectProxy({ user: 'vault-proxy', pass: 's3cret' });
    await putSecret(kube, ns, 'vault-proxy-creds', { username: 'vault-proxy', password: 's3cret' });
    vault.standIn.setSecret('gh-config', JSON.stringify({ github_token: PAT }));
  });
  afterAll(async () => {
    kube?.close();
    await proxy?.close();
    await vault?.close();
  });

  it('reads the GitHub config JSON through the bearer challenge, and reuses the token', async () => {
    const resolver = resolverWith(reachStandIn());
    const before = vault.standIn.requests.length;
    await expect(resolver.getCredentials(holder())).resolves.toEqual({ kind: 'pat', token: PAT });
    const flow = vault.standIn.requests.slice(before).map((r) => `${r.method} ${r.path} ${r.status}`);
    expect(flow).toEqual([
      'GET /secrets/gh-config/ 401',
      `GET /${vault.config.tenantId}/v2.0/.well-known/openid-configuration 200`,
      `POST /${vault.config.tenantId}/oauth2/v2.0/token 200`,
      'GET /secrets/gh-config/ 200',
    ]);
    const tokens = vault.standIn.tokensIssued();
    await expect(resolver.getCredentials(holder())).resolves.toEqual({ kind: 'pat', token: PAT });
    expect(vault.standIn.tokensIssued()).toBe(tokens);
  });

  it('reads GitHub App credentials, checked as a Secret is', async () => {
    const privateKey = rsaPrivateKeyPem();
    vault.standIn.setSecret(
      'gh-app',
      JSON.stringify({
        github_app_id: '123',
        github_app_installation_id: 456,
        github_app_private_key: privateKey,
      }),
    );
    await expect(
      resolverWith(reachStandIn()).getCredentials(holder({ githubConfigSecret: 'gh-app' })),
    ).resolves.toEqual({ kind: 'app', appId: '123', installationId: 456, privateKey });
  });

  it('refuses the stand-in when its CA is not trusted (TLS is checked, not skipped)', async () => {
    const e = await resolverWith({ ...reachStandIn(), caCertificates: [] })
      .getCredentials(holder())
      .then(
        () => undefined,
        (err: unknown) => err as Error,
      );
    expect(e).toBeDefined();
    expect(e).not.toBeInstanceOf(SecretResolutionError);
    expect(`${e?.message} ${String((e as { cause?: unknown }).cause)}`).toMatch(/certificate/i);
  });

  it('names the key and the vault when the secret is not there, never a value', async () => {
    const e = await resolutionError(
      resolverWith(reachStandIn()).getCredentials(holder({ githubConfigSecret: 'no-such-key' })),
    );
    expect(e).toMatchObject({ reason: 'VaultSecretNotFound', namespace: ns, secretName: 'no-such-key' });
    expect(e.message).toBe(
      `vault secret ${ns}/no-such-key: not found in the vault (GitHub config of AutoscalingRunnerSet test-set, Azure Key Vault ${vault.standIn.url})`,
    );
  });

  it('says the vault refused the app (403)', async () => {
    vault.standIn.deny(vault.config.clientId);
    try {
      const e = await resolutionError(resolverWith(reachStandIn()).getCredentials(holder()));
      expect(e).toMatchObject({ reason: 'VaultAccessDenied', secretName: 'gh-config' });
      expect(e.message).toContain(`the vault refused app ${vault.config.clientId} access (403)`);
      expect(e.message).not.toContain(PAT);
    } finally {
      vault.standIn.allow(vault.config.clientId);
    }
  });

  it('says Entra ID refused the app when its certificate is not the registered one', async () => {
    const e = await resolutionError(
      resolverWith(reachStandIn()).getCredentials(
        holder({
          vaultConfig: {
            type: 'azure_key_vault',
            azureKeyVault: { ...vault.config, certificatePath: vault.strangerCertificatePath },
          },
        }),
      ),
    );
    expect(e).toMatchObject({ reason: 'VaultAuthenticationFailed' });
    expect(e.message).toContain(
      `Entra ID refused app ${vault.config.clientId} in tenant ${vault.config.tenantId} (invalid_client)`,
    );
  });

  /** The error a resolution fails with while `target` answers `answer`; the vault is back after. */
  async function duringOutage(
    target: KeyVaultOutageTarget,
    answer: KeyVaultOutageAnswer,
    resolver = resolverWith(reachStandIn()),
  ): Promise<unknown> {
    const seen = vault.standIn.outageAnswers(target);
    vault.standIn.startOutage(target, answer);
    try {
      return await resolver.getCredentials(holder()).then(
        () => undefined,
        (err: unknown) => err,
      );
    } finally {
      vault.standIn.endOutage(target);
      // The failure came from the outage, not from something else on the way.
      expect(vault.standIn.outageAnswers(target)).toBeGreaterThan(seen);
    }
  }

  const unavailable = (detail: string) =>
    expect.objectContaining({
      name: 'VaultUnavailableError',
      reason: 'VaultUnavailable',
      namespace: ns,
      secretName: 'gh-config',
      vault: vault.standIn.url,
      message: `vault secret ${ns}/gh-config: Azure Key Vault ${vault.standIn.url} unavailable: ${detail} (GitHub config of AutoscalingRunnerSet test-set); retried with backoff`,
    });

  it('calls a vault outage (5xx, a dropped connection) VaultUnavailable, not a configuration failure', async () => {
    const e503 = await duringOutage('vault', { status: 503 });
    expect(e503).toEqual(unavailable('the vault answered 503 ServiceUnavailable'));
    expect(e503).toBeInstanceOf(VaultUnavailableError);
    expect(e503).not.toBeInstanceOf(SecretResolutionError);
    expect(await duringOutage('vault', { status: 500 })).toEqual(
      unavailable('the vault answered 500 ServiceUnavailable'),
    );
    expect(await duringOutage('vault', 'reset')).toEqual(
      unavailable('the vault could not be reached (ECONNRESET)'),
    );
    // Throttling passes too.
    expect(await duringOutage('vault', { status: 429 })).toEqual(
      unavailable('the vault answered 429 ServiceUnavailable'),
    );
    // The outage is over: the same read works.
    await expect(resolverWith(reachStandIn()).getCredentials(holder())).resolves.toEqual({
      kind: 'pat',
      token: PAT,
    });
  });

  it("calls an outage of Entra ID's token endpoint VaultUnavailable, not a refused app", async () => {
    // A fresh resolver holds no token, so the read needs the token endpoint.
    expect(await duringOutage('token', { status: 503 })).toEqual(
      unavailable("Entra ID's token endpoint failed (temporarily_unavailable)"),
    );
    expect(await duringOutage('token', 'reset')).toEqual(
      unavailable("Entra ID's token endpoint failed (network_error)"),
    );
  });

  it('calls a vault that does not answer within the resolution deadline VaultUnavailable', async () => {
    const resolver = resolverWith(reachStandIn(), 1_000);
    // A token first, so the read that hangs is the vault's.
    await expect(resolver.getCredentials(holder())).resolves.toEqual({ kind: 'pat', token: PAT });
    expect(await duringOutage('vault', 'silence', resolver)).toEqual(
      unavailable('no answer from the vault or Entra ID in time'),
    );
  });

  it('names the field of a vaultConfig that cannot work', async () => {
    const resolver = resolverWith(reachStandIn());
    const missing = await resolutionError(
      resolver.getCredentials(
        holder({
          vaultConfig: {
            type: 'azure_key_vault',
            azureKeyVault: { ...vault.config, tenantId: '', clientId: ' ' },
          },
        }),
      ),
    );
    expect(missing).toMatchObject({ reason: 'InvalidVaultConfig' });
    expect(missing.message).toContain('vaultConfig.azureKeyVault is missing tenantId, clientId');
    const noFile = await resolutionError(
      resolver.getCredentials(
        holder({
          vaultConfig: {
            type: 'azure_key_vault',
            azureKeyVault: { ...vault.config, certificatePath: '/nonexistent/akv.pem' },
          },
        }),
      ),
    );
    expect(noFile.message).toContain(
      'vaultConfig.azureKeyVault.certificatePath /nonexistent/akv.pem: cannot be read in the controller (ENOENT)',
    );
  });

  it('names a PKCS#12 certificate file and how to convert it; the converted PEM works', async () => {
    const run = promisify(execFile);
    const pfx = `${vault.appCertificatePath}.pfx`;
    const converted = `${vault.appCertificatePath}.converted.pem`;
    const holderWith = (certificatePath: string) =>
      holder({
        vaultConfig: { type: 'azure_key_vault', azureKeyVault: { ...vault.config, certificatePath } },
      });
    try {
      // What Azure's portal and Key Vault hand out: the certificate and its key, no password.
      await run(
        'openssl',
        ['pkcs12', '-export', '-in', vault.appCertificatePath, '-out', pfx, '-passout', 'pass:'],
        { timeout: 30_000 },
      );
      const e = await resolutionError(resolverWith(reachStandIn()).getCredentials(holderWith(pfx)));
      expect(e).toMatchObject({ reason: 'InvalidVaultConfig' });
      expect(e.message).toContain(
        `vaultConfig.azureKeyVault.certificatePath ${pfx}: is PKCS#12 (.pfx), which ARO does not read (upstream does)`,
      );
      // The conversion the message and docs/secrets.md give.
      const [, ...args] = 'openssl pkcs12 -in cert.pfx -out cert.pem -nodes -passin pass:'.split(' ');
      await run(
        'openssl',
        args.map((a) => (a === 'cert.pfx' ? pfx : a === 'cert.pem' ? converted : a)),
        { timeout: 30_000 },
      );
      await expect(resolverWith(reachStandIn()).getCredentials(holderWith(converted))).resolves.toEqual({
        kind: 'pat',
        token: PAT,
      });
    } finally {
      await rm(pfx, { force: true });
      await rm(converted, { force: true });
    }
  });

  it('reads a rotated certificate file at the next resolution', async () => {
    const rotating = `${vault.appCertificatePath}.rotating`;
    await copyFile(vault.strangerCertificatePath, rotating);
    const resolver = resolverWith(reachStandIn());
    const rotatingHolder = holder({
      vaultConfig: { type: 'azure_key_vault', azureKeyVault: { ...vault.config, certificatePath: rotating } },
    });
    try {
      await expect(resolutionError(resolver.getCredentials(rotatingHolder))).resolves.toMatchObject({
        reason: 'VaultAuthenticationFailed',
      });
      await copyFile(vault.appCertificatePath, rotating);
      await expect(resolver.getCredentials(rotatingHolder)).resolves.toEqual({ kind: 'pat', token: PAT });
    } finally {
      await rm(rotating, { force: true });
    }
  });

  it('goes through vaultConfig.proxy, with its credentials from a Kubernetes Secret, unless noProxy says not', async () => {
    const target = `127.0.0.1:${new URL(vault.standIn.url).port}`;
    const proxied = holder({
      vaultConfig: {
        type: 'azure_key_vault',
        azureKeyVault: vault.config,
        proxy: { https: { url: proxy.url, credentialSecretRef: 'vault-proxy-creds' } },
      },
    });
    const tunnels = proxy.tunnels.length;
    await expect(resolverWith(reachStandIn()).getCredentials(proxied)).resolves.toEqual({
      kind: 'pat',
      token: PAT,
    });
    // Both the token endpoint and the vault were reached through the proxy, with its credentials.
    expect(proxy.tunnels.slice(tunnels)).toContain(target);
    expect(proxy.authorizations.at(-1)).toBe(`Basic ${Buffer.from('vault-proxy:s3cret').toString('base64')}`);

    const bypassed = holder({
      vaultConfig: {
        type: 'azure_key_vault',
        azureKeyVault: vault.config,
        proxy: {
          https: { url: proxy.url, credentialSecretRef: 'vault-proxy-creds' },
          noProxy: ['127.0.0.1'],
        },
      },
    });
    const after = proxy.tunnels.length;
    await expect(resolverWith(reachStandIn()).getCredentials(bypassed)).resolves.toEqual({
      kind: 'pat',
      token: PAT,
    });
    expect(proxy.tunnels.length).toBe(after);
  });

  it('reads the GitHub proxy credentials of a vault-backed set from the vault, as upstream does', async () => {
    vault.standIn.setSecret('gh-proxy', JSON.stringify({ username: 'gh-proxy-user', password: 'p@ss' }));
    const settings = await resolverWith(reachStandIn()).getProxySettings(
      holder({ proxy: { https: { url: 'http://proxy.corp:3128', credentialSecretRef: 'gh-proxy' } } }),
    );
    expect(settings).toEqual({ https: 'http://gh-proxy-user:p%40ss@proxy.corp:3128/' });
  });
});
