import { CoreV1Api } from '@kubernetes/client-node';
import { createTestNamespace, testKubeConfig } from '../../harness';

describe('the test control plane', () => {
  it('serves the core API to the admin kubeconfig and creates a namespace per test', async () => {
    const api = testKubeConfig().makeApiClient(CoreV1Api);
    const namespace = await createTestNamespace('smoke');
    const read = await api.readNamespace({ name: namespace });
    expect(read.metadata?.name).toBe(namespace);
    const cm = await api.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'hello' }, data: { a: 'b' } },
    });
    expect(cm.data).toEqual({ a: 'b' });
  });
});
