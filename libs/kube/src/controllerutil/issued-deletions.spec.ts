import { PodKind } from '../client/kinds';
import type { KubeObject } from '../client/types';
import { FakeKubeClient, apiError } from '../testing/fake-kube-client';
import { IssuedDeletions } from './issued-deletions';

describe('IssuedDeletions', () => {
  let now: number;
  let api: FakeKubeClient;
  /** The delete requests the fake API server received, by object name: what the audit log would show. */
  let deletesSent: string[];
  let deletions: IssuedDeletions;

  beforeEach(() => {
    now = 1_000;
    api = new FakeKubeClient(() => now);
    deletesSent = [];
    api.fault((call) => {
      if (call.verb === 'delete') deletesSent.push(call.name);
      return undefined;
    });
    deletions = new IssuedDeletions(30_000, () => now);
  });

  const pod = (name: string): KubeObject =>
    api.seed(PodKind, { metadata: { name, namespace: 'ns', finalizers: ['test/hold'] } });

  it('sends one delete for an object two controllers delete, pinned to its UID', async () => {
    const cached = pod('a');
    expect(await deletions.delete(api, PodKind, cached)).toBe(true);
    expect(await deletions.delete(api, PodKind, cached)).toBe(false);
    expect(deletesSent).toEqual(['a']);
    expect(api.peek(PodKind, 'ns', 'a')?.metadata?.deletionTimestamp).toBeDefined();

    // A same-named successor is another object: its deletion is its own, and the stale copy's UID
    // precondition keeps the first object's deletion from taking it.
    await api.delete(PodKind, 'ns', 'a', {});
    deletesSent.length = 0;
    const successor = pod('a');
    await expect(deletions.delete(api, PodKind, successor)).resolves.toBe(true);
    expect(deletesSent).toEqual(['a']);
  });

  it('forgets a deletion that failed, so the other controller sends its own', async () => {
    const cached = pod('a');
    const heal = api.fault((call) =>
      call.verb === 'delete' ? apiError(500, 'InternalError', 'etcd timeout', call) : undefined,
    );
    await expect(deletions.delete(api, PodKind, cached)).rejects.toThrow('etcd timeout');
    expect(deletions.has(cached.metadata?.uid)).toBe(false);
    heal();
    expect(await deletions.delete(api, PodKind, cached)).toBe(true);
    expect(api.peek(PodKind, 'ns', 'a')?.metadata?.deletionTimestamp).toBeDefined();
  });

  it('counts NotFound as done, and asks again once the record lapses', async () => {
    const cached = pod('a');
    await api.delete(PodKind, 'ns', 'a', {});
    const gone = { metadata: { ...cached.metadata, finalizers: [] } };
    expect(await deletions.delete(api, PodKind, gone)).toBe(true);
    expect(deletions.has(cached.metadata?.uid)).toBe(true);
    now += 30_000;
    expect(deletions.has(cached.metadata?.uid)).toBe(false);
  });

  it('drops a record once the object shows as being deleted, and lapsed ones as new ones come', async () => {
    const first = pod('a');
    await deletions.delete(api, PodKind, first);
    deletions.observe(api.peek(PodKind, 'ns', 'a')!);
    expect(deletions.size).toBe(0);

    await deletions.delete(api, PodKind, pod('b'));
    now += 30_001;
    await deletions.delete(api, PodKind, pod('c'));
    // b lapsed and nobody asked about it again: it still goes.
    expect(deletions.size).toBe(1);
  });
});
