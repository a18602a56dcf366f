import { ApiException, CoreV1Api } from '@kubernetes/client-node';
import { createTestNamespace, itWithGarbageCollector, testKubeConfig, waitFor } from '../../harness';

// jest ignores `testTimeout` inside a `projects` entry; GC passes take seconds on a loaded machine.
jest.setTimeout(120_000);

async function isGone(read: () => Promise<unknown>): Promise<boolean> {
  try {
    await read();
    return false;
  } catch (err) {
    if (err instanceof ApiException && err.code === 404) {
      return true;
    }
    throw err;
  }
}

describe('kube-controller-manager in the test control plane', () => {
  const api = testKubeConfig().makeApiClient(CoreV1Api);

  itWithGarbageCollector('deletes an object whose owner was deleted (ownerReferences cascade)', async () => {
    const namespace = await createTestNamespace('gc');
    const owner = await api.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'owner' } } });
    await api.createNamespacedConfigMap({
      namespace,
      body: {
        metadata: {
          name: 'dependent',
          ownerReferences: [
            { apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata!.uid! },
          ],
        },
      },
    });
    await api.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'bystander' } } });

    await api.deleteNamespacedConfigMap({ namespace, name: 'owner' });

    await waitFor(() => isGone(() => api.readNamespacedConfigMap({ namespace, name: 'dependent' })), {
      description: `configmap ${namespace}/dependent to be garbage-collected after its owner was deleted`,
      timeoutMs: 60_000,
      intervalMs: 250,
    });
    const bystander = await api.readNamespacedConfigMap({ namespace, name: 'bystander' });
    expect(bystander.metadata?.name).toBe('bystander');
  });

  itWithGarbageCollector('finishes deleting a namespace and what it held', async () => {
    const name = `gc-ns-${Date.now().toString(36)}`;
    await api.createNamespace({ body: { metadata: { name } } });
    await api.createNamespacedConfigMap({ namespace: name, body: { metadata: { name: 'content' } } });

    await api.deleteNamespace({ name });

    await waitFor(() => isGone(() => api.readNamespace({ name })), {
      description: `namespace ${name} to disappear after deletion`,
      timeoutMs: 60_000,
      intervalMs: 250,
    });
  });
});
