import { PodKind } from '../client/kinds';
import type { KubeObject } from '../client/types';
import { FakeKubeClient } from '../testing';
import {
  finalizersPatch,
  hasFinalizer,
  removeFinalizer,
  withFinalizers,
  withoutFinalizers,
} from './finalizers';

const obj = (finalizers?: string[]): KubeObject => ({
  metadata: { namespace: 'ns', name: 'x', resourceVersion: '7', finalizers },
});

describe('finalizer list helpers', () => {
  it('adds each missing finalizer once, after the others, and removes only those named', () => {
    expect(hasFinalizer(obj(['a']), 'a')).toBe(true);
    expect(hasFinalizer(obj(), 'a')).toBe(false);
    expect(withFinalizers(obj(['a']), 'b', 'a', 'b')).toEqual(['a', 'b']);
    expect(withFinalizers(obj(), 'a')).toEqual(['a']);
    expect(withoutFinalizers(obj(['a', 'b', 'c']), 'b', 'z')).toEqual(['a', 'c']);
    expect(withoutFinalizers(obj(), 'a')).toEqual([]);
    const copy = obj(['a', 'b']);
    expect(removeFinalizer(copy, 'a')).toBe(true);
    expect(removeFinalizer(copy, 'a')).toBe(false);
    expect(copy.metadata?.finalizers).toEqual(['b']);
  });

  it('guards the finalizers patch with the version read, so a concurrent writer is not overwritten', async () => {
    const kube = new FakeKubeClient();
    const read = kube.seed(PodKind, obj(['theirs']));
    // Someone else adds a finalizer after our read.
    await kube.mergePatch(PodKind, 'ns', 'x', { metadata: { finalizers: ['theirs', 'another'] } });
    await expect(
      kube.mergePatch(PodKind, 'ns', 'x', finalizersPatch(read, withFinalizers(read, 'ours'))),
    ).rejects.toMatchObject({ statusCode: 409 });
    expect(kube.peek<KubeObject>(PodKind, 'ns', 'x')?.metadata?.finalizers).toEqual(['theirs', 'another']);
    expect(finalizersPatch(read, ['a'], { optimisticLock: false })).toEqual({
      metadata: { finalizers: ['a'] },
    });
  });
});
