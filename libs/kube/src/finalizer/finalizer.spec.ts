import { silentLogger } from '@aro/observability';
import { PodKind } from '../client/kinds';
import type { KubeObject } from '../client/types';
import { FakeKubeClient } from '../testing';
import { finalizer, finalizerState, reconcileFinalized, released } from './finalizer';

const names = { name: 'example.com/cleanup', also: ['example.com/registration'] };

function setup() {
  const kube = new FakeKubeClient();
  const write = (obj: KubeObject, patch: object) =>
    kube.mergePatch<KubeObject>(PodKind, obj.metadata?.namespace ?? '', obj.metadata?.name ?? '', patch);
  const read = () => kube.peek<KubeObject>(PodKind, 'ns', 'x');
  return { kube, write, read };
}

describe('finalizer()', () => {
  it('adds the finalizers of a live object, then applies in the same pass', async () => {
    const { kube, write, read } = setup();
    const obj = kube.seed(PodKind, { metadata: { namespace: 'ns', name: 'x', finalizers: ['other'] } });
    expect(finalizerState(obj, names)).toBe('add');
    let applied: KubeObject | undefined;
    await finalizer(names, obj, write, {
      apply: async (o) => ((applied = o), {}),
      cleanup: async () => released(),
    });
    expect(read()?.metadata?.finalizers).toEqual(['other', names.name, ...names.also]);
    expect(applied?.metadata?.finalizers).toEqual(read()?.metadata?.finalizers);
  });

  it('keeps the finalizer while cleanup asks to look again, and drops it once released', async () => {
    const { kube, write, read } = setup();
    kube.seed(PodKind, { metadata: { namespace: 'ns', name: 'x', finalizers: [names.name, 'other'] } });
    await kube.delete(PodKind, 'ns', 'x');
    const deleting = read()!;
    expect(finalizerState(deleting, names)).toBe('cleanup');
    const handlers = { apply: async () => ({}), cleanup: async () => ({ requeueAfterMs: 30_000 }) };
    expect(await finalizer(names, deleting, write, handlers)).toEqual({ requeueAfterMs: 30_000 });
    expect(read()?.metadata?.finalizers).toContain(names.name);

    await finalizer(names, read()!, write, { ...handlers, cleanup: async () => released() });
    expect(read()?.metadata?.finalizers).toEqual(['other']);
  });

  it('lets the object go when the last finalizer is released, and does nothing once it is gone', async () => {
    const { kube, write, read } = setup();
    kube.seed(PodKind, { metadata: { namespace: 'ns', name: 'x', finalizers: [names.name, ...names.also] } });
    await kube.delete(PodKind, 'ns', 'x');
    const deleting = read()!;
    await finalizer(names, deleting, write, {
      apply: async () => ({}),
      cleanup: async () => released(names.also),
    });
    expect(read()).toBeUndefined();
    // Replaying the same (stale) object: the removal meets NotFound, which counts as done.
    await expect(
      finalizer(names, deleting, write, { apply: async () => ({}), cleanup: async () => released() }),
    ).resolves.toEqual({});
    expect(finalizerState({ metadata: { deletionTimestamp: new Date() } }, names)).toBe('gone');
  });
});

describe('finalizer() with aliases (another version of the controller named it otherwise)', () => {
  const renamed = { name: 'example.com/new-name', aliases: ['example.com/old-name'] };

  it('puts its own name in place of an alias on a live object, keeping the others', async () => {
    const { kube, write, read } = setup();
    const obj = kube.seed(PodKind, {
      metadata: { namespace: 'ns', name: 'x', finalizers: ['other', 'example.com/old-name'] },
    });
    expect(finalizerState(obj, renamed)).toBe('add');
    await finalizer(renamed, obj, write, { apply: async () => ({}), cleanup: async () => released() });
    expect(read()?.metadata?.finalizers).toEqual(['other', renamed.name]);
    expect(finalizerState(read()!, renamed)).toBe('apply');
  });

  it('cleans up an object being deleted that carries only an alias, and removes every name once released', async () => {
    const { kube, write, read } = setup();
    kube.seed(PodKind, {
      metadata: { namespace: 'ns', name: 'x', finalizers: ['example.com/old-name', 'other'] },
    });
    await kube.delete(PodKind, 'ns', 'x');
    let cleaned = false;
    await finalizer(renamed, read()!, write, {
      apply: async () => ({}),
      cleanup: async () => ((cleaned = true), released()),
    });
    expect(cleaned).toBe(true);
    expect(read()?.metadata?.finalizers).toEqual(['other']);
  });

  it('removes both names when an object being deleted carries the name and an alias', async () => {
    const { kube, write, read } = setup();
    kube.seed(PodKind, {
      metadata: { namespace: 'ns', name: 'x', finalizers: [renamed.name, 'example.com/old-name'] },
    });
    await kube.delete(PodKind, 'ns', 'x');
    await finalizer(renamed, read()!, write, { apply: async () => ({}), cleanup: async () => released() });
    expect(read()).toBeUndefined();
  });
});

describe('reconcileFinalized()', () => {
  it('forgets an object absent from the cache, and again once its cleanup released it', async () => {
    const { kube, write, read } = setup();
    const forgotten: string[] = [];
    const spec = {
      reader: kube,
      kind: PodKind,
      finalizer: { name: names.name },
      write,
      memory: { forget: (key: string) => forgotten.push(key) },
      apply: async ({ key }: { key: string }) => ({ requeueAfterMs: key === 'ns/x' ? 5 : 0 }),
      cleanup: async () => released(),
    };
    const req = { namespace: 'ns', name: 'x' };
    const pass = { signal: new AbortController().signal, log: silentLogger };
    expect(await reconcileFinalized(req, pass, spec)).toEqual({});
    expect(forgotten).toEqual(['ns/x']);

    kube.seed(PodKind, { metadata: { namespace: 'ns', name: 'x' } });
    expect(await reconcileFinalized(req, pass, spec)).toEqual({ requeueAfterMs: 5 });
    expect(read()?.metadata?.finalizers).toEqual([names.name]);
    expect(forgotten).toEqual(['ns/x']);

    await kube.delete(PodKind, 'ns', 'x');
    await reconcileFinalized(req, pass, { ...spec, cleanup: async () => ({ requeueAfterMs: 1_000 }) });
    expect(forgotten).toEqual(['ns/x']);
    await reconcileFinalized(req, pass, spec);
    expect(read()).toBeUndefined();
    expect(forgotten).toEqual(['ns/x', 'ns/x']);
  });
});
