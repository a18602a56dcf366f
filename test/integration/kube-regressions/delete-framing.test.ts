import type { V1ConfigMap } from '@kubernetes/client-node';
import { ConfigMapKind, KubeClient, isNotFound } from '@aro/kube';
import { createTestNamespace, testKubeConfig } from '../../harness';

// Regression: Node sent DELETE bodies (the DeleteOptions) without Content-Length, so the apiserver read
// them as the start of the next request on the keep-alive socket and answered that request 400.
describe('KubeClient request framing', () => {
  it('answers the request after a DELETE with options as usual on the same connection', async () => {
    const namespace = await createTestNamespace('framing');
    const client = new KubeClient(testKubeConfig());
    try {
      for (let i = 0; i < 5; i++) {
        await client.create<V1ConfigMap>(ConfigMapKind, { metadata: { name: `c${i}`, namespace } });
        await client.delete(ConfigMapKind, namespace, `c${i}`, { gracePeriodSeconds: 0 });
        const after = await client.get(ConfigMapKind, namespace, `c${i}`).then(
          () => 'found',
          (err: unknown) => (isNotFound(err) ? 'not found' : String(err)),
        );
        expect(after).toBe('not found');
      }
    } finally {
      client.close();
    }
  });
});
