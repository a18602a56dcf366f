import type { V1ConfigMap } from '@kubernetes/client-node';
import { ConfigMapKind } from '../client/kinds';
import { FakeKubeClient } from '../testing';
import { createOrReplace } from './create-or-replace';

const desired = (value: string): V1ConfigMap => ({
  metadata: { namespace: 'ns', name: 'cm' },
  data: { value },
});
const upToDate = (current: V1ConfigMap, want: V1ConfigMap) => current.data?.value === want.data?.value;

describe('createOrReplace', () => {
  it('creates, leaves an up-to-date object alone, and replaces a changed one', async () => {
    const kube = new FakeKubeClient();
    expect((await createOrReplace(kube, ConfigMapKind, desired('a'), { upToDate })).operation).toBe(
      'created',
    );
    const before = kube.peek<V1ConfigMap>(ConfigMapKind, 'ns', 'cm')?.metadata?.resourceVersion;
    expect((await createOrReplace(kube, ConfigMapKind, desired('a'), { upToDate })).operation).toBe(
      'unchanged',
    );
    expect(kube.peek<V1ConfigMap>(ConfigMapKind, 'ns', 'cm')?.metadata?.resourceVersion).toBe(before);
    const { operation, object } = await createOrReplace(kube, ConfigMapKind, desired('b'), { upToDate });
    expect(operation).toBe('replaced');
    expect(object.data).toEqual({ value: 'b' });
    expect(kube.peek<V1ConfigMap>(ConfigMapKind, 'ns', 'cm')?.data).toEqual({ value: 'b' });
  });

  it('refuses to replace over a newer object than the one read', async () => {
    const kube = new FakeKubeClient();
    const read = kube.seed(ConfigMapKind, desired('a'));
    await kube.mergePatch(ConfigMapKind, 'ns', 'cm', { data: { other: 'x' } });
    await expect(
      createOrReplace(kube, ConfigMapKind, desired('b'), { upToDate, current: read }),
    ).rejects.toMatchObject({ statusCode: 409 });
  });
});
