import type { KubeClient } from '@aro/kube';
import type { SecretResolver } from '@aro/secrets';
import { createTestNamespace } from '../../harness';
import { holderIn, newKubeClient, newResolver, putConfigMap, resolutionError, TEST_CA } from './support';

describe('SecretResolver.getRootCAs against ConfigMaps in the API server', () => {
  let kube: KubeClient;
  let resolver: SecretResolver;
  let ns: string;
  const tlsFrom = (name: string, key: string) => ({ certificateFrom: { configMapKeyRef: { name, key } } });

  beforeAll(async () => {
    kube = newKubeClient();
    resolver = newResolver(kube);
    ns = await createTestNamespace('secrets-ca');
    await putConfigMap(kube, ns, 'ghes-ca', {
      'ca.crt': TEST_CA,
      'corrupt.crt': TEST_CA.replace(/\n[A-Za-z0-9+/]{20}/, '\nAAAAAAAAAAAAAAAAAAAA'),
      'not-pem.crt': 'this is not a certificate',
    });
  });

  afterAll(() => kube.close());

  it('is undefined for an object without githubServerTLS', async () => {
    await expect(resolver.getRootCAs(holderIn(ns))).resolves.toBeUndefined();
  });

  it('returns the CA from the ConfigMap key', async () => {
    const cas = await resolver.getRootCAs(holderIn(ns, { githubServerTLS: tlsFrom('ghes-ca', 'ca.crt') }));
    expect(cas).toEqual([TEST_CA.trim()]);
  });

  it.each([
    ['corrupt.crt', 'certificate 1 of 1 does not parse as X.509'],
    ['not-pem.crt', 'holds no PEM certificate'],
  ])('refuses %s, naming the ConfigMap and key', async (key, problem) => {
    const e = await resolutionError(
      resolver.getRootCAs(holderIn(ns, { githubServerTLS: tlsFrom('ghes-ca', key) })),
    );
    expect(e).toMatchObject({ reason: 'InvalidCertificate', namespace: ns, secretName: 'ghes-ca', key });
    expect(e.message).toContain(`ConfigMap ${ns}/ghes-ca key "${key}": ${problem}`);
  });

  it('names the ConfigMap when it does not exist', async () => {
    const e = await resolutionError(
      resolver.getRootCAs(holderIn(ns, { githubServerTLS: tlsFrom('no-such-ca', 'ca.crt') })),
    );
    expect(e).toMatchObject({ reason: 'ConfigMapNotFound', secretName: 'no-such-ca' });
    expect(e.message).toContain(`ConfigMap ${ns}/no-such-ca: CA ConfigMap not found`);
  });

  it('names the key when the ConfigMap lacks it', async () => {
    const e = await resolutionError(
      resolver.getRootCAs(holderIn(ns, { githubServerTLS: tlsFrom('ghes-ca', 'tls.crt') })),
    );
    expect(e).toMatchObject({ reason: 'KeyMissing', secretName: 'ghes-ca', key: 'tls.crt' });
  });
});
