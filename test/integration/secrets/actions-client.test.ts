import type { MultiClient } from '@aro/actions';
import type { KubeClient } from '@aro/kube';
import type { SecretResolver } from '@aro/secrets';
import { createTestNamespace } from '../../harness';
import {
  holderIn,
  newKubeClient,
  newMultiClient,
  newResolver,
  putConfigMap,
  putSecret,
  replaceSecretData,
  rsaPrivateKeyPem,
  TEST_CA,
} from './support';

describe('SecretResolver.getActionsClient through the MultiClient', () => {
  let kube: KubeClient;
  let multiClient: MultiClient;
  let resolver: SecretResolver;
  let ns: string;

  beforeAll(async () => {
    kube = newKubeClient();
    multiClient = newMultiClient();
    resolver = newResolver(kube, multiClient);
    ns = await createTestNamespace('secrets-client');
    await putConfigMap(kube, ns, 'ghes-ca', { 'ca.crt': TEST_CA });
  });

  afterAll(async () => {
    await multiClient.close();
    kube.close();
  });

  it('hands out the same client while the Secret is unchanged, and a new one once it changes', async () => {
    await putSecret(kube, ns, 'gh-config', { github_token: 'ghp_before' });
    const holder = holderIn(ns);
    const first = await resolver.getActionsClient(holder);
    expect(await resolver.getActionsClient(holder)).toBe(first);

    await replaceSecretData(kube, ns, 'gh-config', { github_token: 'ghp_after' });
    const afterRotation = await resolver.getActionsClient(holder);
    expect(afterRotation).not.toBe(first);
    expect(await resolver.getActionsClient(holder)).toBe(afterRotation);
  });

  it('hands out a new client when the rotated Secret switches from a PAT to a GitHub App', async () => {
    await putSecret(kube, ns, 'switching', { github_token: 'ghp_x' });
    const holder = holderIn(ns, { githubConfigSecret: 'switching' });
    const patClient = await resolver.getActionsClient(holder);
    await replaceSecretData(kube, ns, 'switching', {
      github_app_id: '99',
      github_app_installation_id: '100',
      github_app_private_key: rsaPrivateKeyPem(),
    });
    expect(await resolver.getActionsClient(holder)).not.toBe(patClient);
  });

  it('keys clients on proxy, CA and namespace as well as credentials', async () => {
    await putSecret(kube, ns, 'shared', { github_token: 'ghp_shared' });
    const plain = holderIn(ns, { githubConfigSecret: 'shared' });
    const base = await resolver.getActionsClient(plain);
    const proxied = await resolver.getActionsClient({
      ...plain,
      proxy: { https: { url: 'http://proxy.corp:3128' } },
    });
    const withCA = await resolver.getActionsClient({
      ...plain,
      githubServerTLS: { certificateFrom: { configMapKeyRef: { name: 'ghes-ca', key: 'ca.crt' } } },
    });
    expect(new Set([base, proxied, withCA]).size).toBe(3);
    expect(
      await resolver.getActionsClient({
        ...plain,
        githubServerTLS: { certificateFrom: { configMapKeyRef: { name: 'ghes-ca', key: 'ca.crt' } } },
      }),
    ).toBe(withCA);
  });

  it('fails with the Secret problem rather than creating a client', async () => {
    const before = multiClient.size;
    await expect(
      resolver.getActionsClient(holderIn(ns, { githubConfigSecret: 'missing' })),
    ).rejects.toMatchObject({
      reason: 'SecretNotFound',
      secretName: 'missing',
    });
    expect(multiClient.size).toBe(before);
  });
});
