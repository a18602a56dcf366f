import { PodKind } from '../client/kinds';
import type { KubeObject } from '../client/types';
import { FakeKubeClient, apiError } from '../testing';
import { deleteIgnoringNotFound, getIgnoringNotFound } from './not-found';

describe('ignore not found', () => {
  it('reads an absent object as undefined and deletes an absent one as done, passing other errors', async () => {
    const kube = new FakeKubeClient();
    expect(await getIgnoringNotFound(kube, PodKind, 'ns', 'x')).toBeUndefined();
    expect(await deleteIgnoringNotFound(kube, PodKind, 'ns', 'x')).toBe(false);
    kube.seed(PodKind, { metadata: { namespace: 'ns', name: 'x' } });
    expect((await getIgnoringNotFound<KubeObject>(kube, PodKind, 'ns', 'x'))?.metadata?.name).toBe('x');
    expect(await deleteIgnoringNotFound(kube, PodKind, 'ns', 'x')).toBe(true);
    expect(kube.peek(PodKind, 'ns', 'x')).toBeUndefined();
    kube.fault(() => apiError(500, 'InternalError', 'boom'));
    await expect(getIgnoringNotFound(kube, PodKind, 'ns', 'x')).rejects.toMatchObject({ statusCode: 500 });
  });

  it('deletes only the incarnation named by uid', async () => {
    const kube = new FakeKubeClient();
    kube.seed(PodKind, { metadata: { namespace: 'ns', name: 'x', uid: 'new' } });
    await expect(deleteIgnoringNotFound(kube, PodKind, 'ns', 'x', { uid: 'old' })).rejects.toMatchObject({
      statusCode: 409,
    });
    expect(kube.peek(PodKind, 'ns', 'x')).toBeDefined();
  });
});
