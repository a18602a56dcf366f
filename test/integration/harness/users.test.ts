import { ApiException, CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { createTestNamespace, kubeConfigForUser, testKubeConfig, waitFor } from '../../harness';

jest.setTimeout(60_000);

describe('users minted by the harness', () => {
  it('are authenticated by their client certificate and authorised only by RBAC', async () => {
    const namespace = await createTestNamespace('rbac');
    const alice = (await kubeConfigForUser('alice', ['aro-testers'])).makeApiClient(CoreV1Api);

    const denied = await alice.listNamespacedPod({ namespace }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(denied).toBeInstanceOf(ApiException);
    expect((denied as ApiException<string>).code).toBe(403);
    const status = JSON.parse(String((denied as ApiException<string>).body)) as { message: string };
    expect(status.message).toContain('User "alice" cannot list resource "pods"');

    const rbac = testKubeConfig().makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace,
      body: {
        metadata: { name: 'pod-reader' },
        rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['list'] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: 'testers-read-pods' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pod-reader' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'aro-testers' }],
      },
    });

    // The RBAC authoriser reads through an informer, so the grant takes effect a moment later.
    const pods = await waitFor(() => alice.listNamespacedPod({ namespace }), {
      description: `alice (group aro-testers) to be allowed to list pods in ${namespace}`,
      timeoutMs: 10_000,
    });
    expect(pods.items).toEqual([]);
    const stillDenied = await alice.listNamespacedSecret({ namespace }).then(
      () => 0,
      (err: unknown) => (err instanceof ApiException ? err.code : -1),
    );
    expect(stillDenied).toBe(403);
  });
});
