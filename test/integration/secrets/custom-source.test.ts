import { DynamicModule, Injectable, Module } from '@nestjs/common';
import { Test, TestingModule } from '@nestjs/testing';
import { GitHubCredentials, MultiClient } from '@aro/actions';
import { KubeClient } from '@aro/kube';
import {
  CREDENTIAL_SOURCES,
  CredentialSource,
  credentialsFromJson,
  GitHubConfigHolder,
  ProxyCredentials,
  proxyCredentialsFromSecretData,
  SecretResolutionError,
  SecretResolver,
  SecretsModule,
} from '@aro/secrets';
import { createTestNamespace } from '../../harness';
import {
  holderIn,
  newKubeClient,
  newMultiClient,
  putSecret,
  resolutionError,
  rsaPrivateKeyPem,
} from './support';

/**
 * What a platform team would write for its vault: a source that claims holders of its vault type and
 * serves the GitHub config keys as JSON. Here the "vault" is a map in memory.
 */
@Injectable()
class InMemoryVaultSource implements CredentialSource {
  readonly name = 'in-memory-vault';
  private readonly entries = new Map<string, string>();

  put(name: string, value: object): void {
    this.entries.set(name, JSON.stringify(value));
  }

  handles(holder: GitHubConfigHolder): boolean {
    return holder.vaultConfig?.type === 'in_memory';
  }

  async getCredentials(holder: GitHubConfigHolder): Promise<GitHubCredentials> {
    const where = {
      namespace: holder.namespace,
      name: holder.githubConfigSecret,
      objectKind: 'vault secret' as const,
    };
    return credentialsFromJson(this.read(where), where);
  }

  async getProxyCredentials(holder: GitHubConfigHolder, secretName: string): Promise<ProxyCredentials> {
    const where = { namespace: holder.namespace, name: secretName, objectKind: 'vault secret' as const };
    return proxyCredentialsFromSecretData(JSON.parse(this.read(where)) as Record<string, string>, where);
  }

  private read(where: { namespace: string; name: string; objectKind: 'vault secret' }): string {
    const value = this.entries.get(where.name);
    if (value === undefined) {
      throw new SecretResolutionError({
        reason: 'SecretNotFound',
        ...where,
        secretName: where.name,
        detail: 'no such entry',
      });
    }
    return value;
  }
}

@Module({ providers: [InMemoryVaultSource], exports: [InMemoryVaultSource] })
class InMemoryVaultModule {}

/** Stands in for the app's global KubeClient and MultiClient providers. */
function infrastructure(kube: KubeClient, multiClient: MultiClient): DynamicModule {
  return {
    module: class TestInfrastructureModule {},
    global: true,
    providers: [
      { provide: KubeClient, useValue: kube },
      { provide: MultiClient, useValue: multiClient },
    ],
    exports: [KubeClient, MultiClient],
  };
}

describe('a credential source plugged in as a Nest module through CREDENTIAL_SOURCES', () => {
  let kube: KubeClient;
  let multiClient: MultiClient;
  let app: TestingModule;
  let resolver: SecretResolver;
  let vault: InMemoryVaultSource;
  let ns: string;

  beforeAll(async () => {
    kube = newKubeClient();
    multiClient = newMultiClient();
    app = await Test.createTestingModule({
      imports: [
        infrastructure(kube, multiClient),
        SecretsModule.forRoot({ imports: [InMemoryVaultModule], extraSources: [InMemoryVaultSource] }),
      ],
    }).compile();
    resolver = app.get(SecretResolver);
    vault = app.get(InMemoryVaultSource);
    ns = await createTestNamespace('secrets-custom-source');
  });

  afterAll(async () => {
    await app.close();
    await multiClient.close();
    kube.close();
  });

  it('lists the plugged-in source before the built-in Azure Key Vault and Kubernetes Secret sources', () => {
    const sources = app.get<CredentialSource[]>(CREDENTIAL_SOURCES);
    expect(sources.map((s) => s.name)).toEqual(['in-memory-vault', 'azure-key-vault', 'kubernetes-secret']);
  });

  it('serves a holder of its vault type from the vault, with no Secret in the namespace', async () => {
    const privateKey = rsaPrivateKeyPem();
    vault.put('org-app', {
      github_app_id: '31',
      github_app_installation_id: 32,
      github_app_private_key: privateKey,
    });
    const holder = holderIn(ns, { githubConfigSecret: 'org-app', vaultConfig: { type: 'in_memory' } });
    await expect(resolver.getCredentials(holder)).resolves.toEqual({
      kind: 'app',
      appId: '31',
      installationId: 32,
      privateKey,
    });
  });

  it('validates vault values as strictly as Secrets, naming the vault entry', async () => {
    vault.put('half-app', { github_app_id: '31' });
    const e = await resolutionError(
      resolver.getCredentials(
        holderIn(ns, { githubConfigSecret: 'half-app', vaultConfig: { type: 'in_memory' } }),
      ),
    );
    expect(e).toMatchObject({
      reason: 'KeyMissing',
      secretName: 'half-app',
      key: 'github_app_installation_id',
    });
    expect(e.message).toContain(`vault secret ${ns}/half-app`);
  });

  it('takes proxy credentials for a vault holder from the vault', async () => {
    vault.put('vault-pat', { github_token: 'ghp_from_vault' });
    vault.put('vault-proxy', { username: 'vault-user', password: 'vault-pass' });
    const holder = holderIn(ns, {
      githubConfigSecret: 'vault-pat',
      vaultConfig: { type: 'in_memory' },
      proxy: { https: { url: 'http://proxy.corp:3128', credentialSecretRef: 'vault-proxy' } },
    });
    await expect(resolver.getProxySettings(holder)).resolves.toEqual({
      https: 'http://vault-user:vault-pass@proxy.corp:3128/',
    });
    const client = await resolver.getActionsClient(holder);
    expect(await resolver.getActionsClient(holder)).toBe(client);
  });

  it('still serves plain holders from Kubernetes Secrets', async () => {
    await putSecret(kube, ns, 'gh-config', { github_token: 'ghp_from_kube' });
    await expect(resolver.getCredentials(holderIn(ns))).resolves.toEqual({
      kind: 'pat',
      token: 'ghp_from_kube',
    });
  });

  it('refuses a vault type that neither source handles, listing the sources', async () => {
    const e = await resolutionError(
      resolver.getCredentials(holderIn(ns, { vaultConfig: { type: 'hashicorp_vault' } })),
    );
    expect(e.reason).toBe('NoCredentialSource');
    expect(e.message).toContain('no credential source handles vault type hashicorp_vault');
    expect(e.message).toContain('registered sources: in-memory-vault, azure-key-vault, kubernetes-secret');
  });
});
