import type { GitHubCredentials, MultiClient } from '@aro/actions';
import type { KubeClient } from '@aro/kube';
import type { GitHubConfigHolder } from './config-holder';
import type { CredentialSource } from './credential-source';
import { SecretResolutionError } from './errors';
import { KubernetesSecretSource } from './kubernetes-secret-source';
import { SecretResolver } from './secret-resolver';

/** A KubeClient whose reads never answer: what an API server that stopped responding looks like. */
const silentKube = { get: () => new Promise<never>(() => undefined) } as unknown as KubeClient;
const noMultiClient = {} as MultiClient;
const holder: GitHubConfigHolder = {
  namespace: 'team-a',
  githubConfigUrl: 'https://github.com/org',
  githubConfigSecret: 'gh',
  name: 'EphemeralRunner r-1',
};

function staticSource(name: string, vaultType: string, credentials: GitHubCredentials): CredentialSource {
  return {
    name,
    handles: (h) => (h.vaultConfig?.type ?? '') === vaultType,
    getCredentials: async () => credentials,
  };
}

describe('SecretResolver', () => {
  it('gives up on a read that does not answer within its timeout', async () => {
    const resolver = new SecretResolver({ kube: silentKube, multiClient: noMultiClient, timeoutMs: 20 });
    await expect(resolver.getCredentials(holder)).rejects.toMatchObject({ name: 'TimeoutError' });
  });

  it('gives up when the caller aborts', async () => {
    const resolver = new SecretResolver({ kube: silentKube, multiClient: noMultiClient });
    const controller = new AbortController();
    const pending = resolver.getCredentials(holder, controller.signal);
    controller.abort(new Error('reconcile cancelled'));
    await expect(pending).rejects.toThrow('reconcile cancelled');
  });

  it('asks the first source that handles the holder', async () => {
    const resolver = new SecretResolver({
      kube: silentKube,
      multiClient: noMultiClient,
      sources: [
        staticSource('vault-a', 'a', { kind: 'pat', token: 'from-a' }),
        staticSource('vault-b', 'b', { kind: 'pat', token: 'from-b' }),
        new KubernetesSecretSource(silentKube),
      ],
    });
    await expect(resolver.getCredentials({ ...holder, vaultConfig: { type: 'b' } })).resolves.toEqual({
      kind: 'pat',
      token: 'from-b',
    });
  });

  it('names the vault type and the sources when none handles the holder', async () => {
    const resolver = new SecretResolver({ kube: silentKube, multiClient: noMultiClient });
    const result = resolver.getCredentials({ ...holder, vaultConfig: { type: 'hashicorp' } });
    await expect(result).rejects.toBeInstanceOf(SecretResolutionError);
    await expect(result).rejects.toThrow(
      'vault secret team-a/gh: no credential source handles vault type hashicorp (EphemeralRunner r-1); ' +
        'registered sources: kubernetes-secret',
    );
  });

  it('refuses a holder without a namespace before reading anything', async () => {
    const resolver = new SecretResolver({ kube: silentKube, multiClient: noMultiClient });
    await expect(resolver.getCredentials({ ...holder, namespace: '' })).rejects.toMatchObject({
      reason: 'InvalidHolder',
    });
  });

  it('refuses githubServerTLS without a ConfigMap reference', async () => {
    const resolver = new SecretResolver({ kube: silentKube, multiClient: noMultiClient });
    const tls = { certificateFrom: { configMapKeyRef: { name: '', key: 'ca.crt' } } };
    await expect(resolver.getRootCAs({ ...holder, githubServerTLS: tls })).rejects.toMatchObject({
      reason: 'InvalidTLSConfig',
    });
  });
});
