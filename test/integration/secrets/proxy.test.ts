import type { KubeClient } from '@aro/kube';
import type { SecretResolver } from '@aro/secrets';
import { createTestNamespace } from '../../harness';
import { holderIn, newKubeClient, newResolver, putSecret, resolutionError } from './support';

describe('SecretResolver.getProxySettings against Secrets in the API server', () => {
  let kube: KubeClient;
  let resolver: SecretResolver;
  let ns: string;

  beforeAll(async () => {
    kube = newKubeClient();
    resolver = newResolver(kube);
    ns = await createTestNamespace('secrets-proxy');
    await putSecret(kube, ns, 'proxy-creds', { username: 'svc-aro', password: 'p@ss:word/1' });
    await putSecret(kube, ns, 'proxy-no-password', { username: 'svc-aro' });
    await putSecret(kube, ns, 'proxy-no-username', { password: 'x' });
  });

  afterAll(() => kube.close());

  it('is undefined for an object without a proxy', async () => {
    await expect(resolver.getProxySettings(holderIn(ns))).resolves.toBeUndefined();
  });

  it('passes a proxy without credentials through, with its noProxy list', async () => {
    const holder = holderIn(ns, {
      proxy: {
        http: { url: 'http://proxy.corp:3128' },
        https: { url: 'http://proxy.corp:3128' },
        noProxy: ['.internal', '10.0.0.0/8'],
      },
    });
    await expect(resolver.getProxySettings(holder)).resolves.toEqual({
      http: 'http://proxy.corp:3128/',
      https: 'http://proxy.corp:3128/',
      noProxy: ['.internal', '10.0.0.0/8'],
    });
  });

  it('puts username and password from the credential Secret into the proxy URL', async () => {
    const holder = holderIn(ns, {
      proxy: {
        http: { url: 'http://proxy.corp:3128' },
        https: { url: 'http://secure-proxy.corp:3129', credentialSecretRef: 'proxy-creds' },
      },
    });
    const settings = await resolver.getProxySettings(holder);
    expect(settings).toEqual({
      http: 'http://proxy.corp:3128/',
      https: 'http://svc-aro:p%40ss%3Aword%2F1@secure-proxy.corp:3129/',
    });
    const url = new URL(settings!.https!);
    expect(decodeURIComponent(url.password)).toBe('p@ss:word/1');
  });

  it('names the proxy credential Secret when it does not exist', async () => {
    const e = await resolutionError(
      resolver.getProxySettings(
        holderIn(ns, { proxy: { https: { url: 'http://p:1', credentialSecretRef: 'gone' } } }),
      ),
    );
    expect(e).toMatchObject({ reason: 'SecretNotFound', namespace: ns, secretName: 'gone' });
    expect(e.message).toContain(`Secret ${ns}/gone: proxy credential Secret not found`);
  });

  it.each([
    ['proxy-no-password', 'password'],
    ['proxy-no-username', 'username'],
  ])('names the missing key when %s lacks its %s', async (secretName, key) => {
    const e = await resolutionError(
      resolver.getProxySettings(
        holderIn(ns, { proxy: { http: { url: 'http://p:1', credentialSecretRef: secretName } } }),
      ),
    );
    expect(e).toMatchObject({ reason: 'ProxyCredentialsMissing', secretName, key });
  });
});
