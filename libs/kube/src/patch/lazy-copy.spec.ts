import { LazyCopy } from './lazy-copy';

interface Runner {
  metadata: {
    name: string;
    resourceVersion?: string;
    finalizers?: string[];
    labels?: Record<string, string>;
  };
  status?: { phase?: string; failures?: Record<string, string> };
}

function runner(): Runner {
  return {
    metadata: { name: 'r1', resourceVersion: '42', finalizers: ['a', 'b'], labels: { x: '1' } },
    status: { phase: 'Pending' },
  };
}

describe('LazyCopy', () => {
  it('hands out the original until mutate() is called', () => {
    const original = runner();
    const copy = new LazyCopy(original);
    expect(copy.current).toBe(original);
    expect(copy.changed).toBe(false);
    expect(copy.mergePatch()).toBeUndefined();
  });

  it('copies on the first mutate() and reuses that copy afterwards', () => {
    const original = runner();
    const copy = new LazyCopy(original);
    const first = copy.mutate();
    expect(first).not.toBe(original);
    expect(copy.mutate()).toBe(first);
    expect(copy.current).toBe(first);
  });

  it('never writes to the original', () => {
    const original = runner();
    const copy = new LazyCopy(original);
    copy.mutate().metadata.finalizers!.pop();
    copy.mutate().status!.phase = 'Running';
    expect(original).toEqual(runner());
  });

  it('reports no change when mutate() was called but nothing differs', () => {
    const copy = new LazyCopy(runner());
    copy.mutate().status!.phase = 'Pending';
    expect(copy.changed).toBe(false);
    expect(copy.mergePatch()).toBeUndefined();
  });

  it('reports no change when a change was undone', () => {
    const copy = new LazyCopy(runner());
    copy.mutate().status!.phase = 'Running';
    copy.mutate().status!.phase = 'Pending';
    expect(copy.changed).toBe(false);
  });

  it('patches a removed finalizer as the whole remaining list', () => {
    const copy = new LazyCopy(runner());
    const m = copy.mutate();
    m.metadata.finalizers = m.metadata.finalizers!.filter((f) => f !== 'a');
    expect(copy.changed).toBe(true);
    expect(copy.mergePatch()).toEqual({ metadata: { finalizers: ['b'] } });
  });

  it('patches nested additions and removals together', () => {
    const copy = new LazyCopy(runner());
    const m = copy.mutate();
    delete m.metadata.labels;
    m.status = { phase: 'Failed', failures: { uid1: 'now' } };
    expect(copy.mergePatch()).toEqual({
      metadata: { labels: null },
      status: { phase: 'Failed', failures: { uid1: 'now' } },
    });
  });

  it('adds the original resourceVersion to the patch for an optimistic lock', () => {
    const copy = new LazyCopy(runner());
    copy.mutate().metadata.finalizers = [];
    expect(copy.mergePatch({ optimisticLock: true })).toEqual({
      metadata: { finalizers: [], resourceVersion: '42' },
    });
  });

  it('sends nothing under an optimistic lock when nothing changed', () => {
    const copy = new LazyCopy(runner());
    copy.mutate();
    expect(copy.mergePatch({ optimisticLock: true })).toBeUndefined();
  });

  it('refuses an optimistic lock without a resourceVersion to lock on', () => {
    const original = runner();
    delete original.metadata.resourceVersion;
    const copy = new LazyCopy(original);
    copy.mutate().status!.phase = 'Running';
    expect(() => copy.mergePatch({ optimisticLock: true })).toThrow(/resourceVersion/);
  });
});
