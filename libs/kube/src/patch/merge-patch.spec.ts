import { createMergePatch, jsonEqual } from './merge-patch';

/** Applies an RFC 7386 patch, to check that a computed patch really turns original into modified. */
function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> =
    typeof target === 'object' && target !== null && !Array.isArray(target)
      ? { ...(target as Record<string, unknown>) }
      : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = applyMergePatch(out[key], value);
  }
  return out;
}

describe('createMergePatch', () => {
  it('returns undefined when nothing changed', () => {
    const obj = { metadata: { name: 'a', labels: { x: '1' } }, spec: { list: [1, 2, { a: 1 }] } };
    expect(createMergePatch(obj, structuredClone(obj))).toBeUndefined();
  });

  it('returns undefined for two empty objects', () => {
    expect(createMergePatch({}, {})).toBeUndefined();
  });

  it('carries a changed scalar with its new value', () => {
    expect(createMergePatch({ a: 1, b: 'x' }, { a: 2, b: 'x' })).toEqual({ a: 2 });
  });

  it('carries an added member whole', () => {
    expect(createMergePatch({ a: 1 }, { a: 1, b: { c: [1] } })).toEqual({ b: { c: [1] } });
  });

  it('turns a removed member into null', () => {
    expect(createMergePatch({ a: 1, b: 2 }, { a: 1 })).toEqual({ b: null });
  });

  it('treats a member set to undefined as removed, as JSON serialization does', () => {
    expect(createMergePatch({ a: 1, b: 2 }, { a: 1, b: undefined })).toEqual({ b: null });
  });

  it('ignores a member that is undefined on both sides', () => {
    expect(createMergePatch({ a: 1, b: undefined }, { a: 1 })).toBeUndefined();
  });

  it('diffs nested objects member by member', () => {
    const original = { metadata: { name: 'r', labels: { a: '1', b: '2' }, annotations: { keep: 'y' } } };
    const modified = { metadata: { name: 'r', labels: { a: '1', c: '3' }, annotations: { keep: 'y' } } };
    expect(createMergePatch(original, modified)).toEqual({ metadata: { labels: { b: null, c: '3' } } });
  });

  it('leaves out nested objects that did not change', () => {
    const original = { spec: { a: { b: { c: 1 } } }, status: { phase: 'Pending' } };
    const modified = { spec: { a: { b: { c: 1 } } }, status: { phase: 'Running' } };
    expect(createMergePatch(original, modified)).toEqual({ status: { phase: 'Running' } });
  });

  it('replaces an array whole when one element changed', () => {
    const original = { metadata: { finalizers: ['a', 'b', 'c'] } };
    const modified = { metadata: { finalizers: ['a', 'c'] } };
    expect(createMergePatch(original, modified)).toEqual({ metadata: { finalizers: ['a', 'c'] } });
  });

  it('replaces an array of objects whole when a nested member changed', () => {
    const original = {
      spec: {
        containers: [
          { name: 'runner', image: 'v1' },
          { name: 'dind', image: 'd' },
        ],
      },
    };
    const modified = {
      spec: {
        containers: [
          { name: 'runner', image: 'v2' },
          { name: 'dind', image: 'd' },
        ],
      },
    };
    expect(createMergePatch(original, modified)).toEqual({
      spec: {
        containers: [
          { name: 'runner', image: 'v2' },
          { name: 'dind', image: 'd' },
        ],
      },
    });
  });

  it('leaves out an array that is equal element by element', () => {
    expect(createMergePatch({ a: [{ x: 1 }, [2]] }, { a: [{ x: 1 }, [2]] })).toBeUndefined();
  });

  it('removes a whole array as null', () => {
    expect(createMergePatch({ metadata: { finalizers: ['a'] } }, { metadata: {} })).toEqual({
      metadata: { finalizers: null },
    });
  });

  it('replaces a value whose type changed (object to array, array to scalar, scalar to object)', () => {
    expect(createMergePatch({ a: { x: 1 }, b: [1], c: 1 }, { a: [1], b: 's', c: { y: 2 } })).toEqual({
      a: [1],
      b: 's',
      c: { y: 2 },
    });
  });

  it('replaces an object whole when it becomes null, which the server reads as removal', () => {
    expect(createMergePatch({ a: { x: 1 } }, { a: null })).toEqual({ a: null });
  });

  it('adds a member whose original value was null', () => {
    expect(createMergePatch({ a: null }, { a: { x: 1 } })).toEqual({ a: { x: 1 } });
  });

  it('distinguishes 0, false, empty string and absent', () => {
    expect(createMergePatch({ a: 0, b: false, c: '' }, { a: false, b: 0, c: '' })).toEqual({
      a: false,
      b: 0,
    });
  });

  it('keeps an emptied object as an object with removals, not as a replacement', () => {
    expect(createMergePatch({ labels: { a: '1', b: '2' } }, { labels: {} })).toEqual({
      labels: { a: null, b: null },
    });
  });

  it('drops undefined members inside an added value', () => {
    expect(createMergePatch({}, { a: { b: undefined, c: 1 } })).toEqual({ a: { c: 1 } });
  });

  it('does not share structure with modified: changing it later does not change the patch', () => {
    const modified = { a: { list: [1] } };
    const patch = createMergePatch({}, modified) as { a: { list: number[] } };
    modified.a.list.push(2);
    expect(patch.a.list).toEqual([1]);
  });

  it('rejects arrays and non-objects at the top level', () => {
    expect(() => createMergePatch([], [])).toThrow(TypeError);
  });

  it('produces a patch that applied to the original yields the modified object', () => {
    const original = {
      metadata: { name: 'r', labels: { a: '1', b: '2' }, finalizers: ['x', 'y'], annotations: { z: '1' } },
      spec: { replicas: 1, template: { spec: { containers: [{ name: 'c' }] } } },
      status: { phase: 'Pending', failures: { u1: 't1' } },
    };
    const modified = {
      metadata: { name: 'r', labels: { a: '9' }, finalizers: ['y'] },
      spec: { replicas: 2, template: { spec: { containers: [{ name: 'c', image: 'i' }] } } },
      status: { phase: 'Failed', failures: { u1: 't1', u2: 't2' }, reason: 'OOM' },
    };
    const patch = createMergePatch(original, modified);
    expect(applyMergePatch(original, patch)).toEqual(modified);
  });
});

describe('jsonEqual', () => {
  it('compares structurally and ignores undefined members', () => {
    expect(jsonEqual({ a: [1, { b: 2 }], c: undefined }, { a: [1, { b: 2 }] })).toBe(true);
    expect(jsonEqual({ a: [1, 2] }, { a: [2, 1] })).toBe(false);
    expect(jsonEqual({ a: 1 }, { a: 1, b: 2 })).toBe(false);
    expect(jsonEqual(null, {})).toBe(false);
    expect(jsonEqual([], {})).toBe(false);
  });
});
