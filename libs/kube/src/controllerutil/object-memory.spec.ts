import { ObjectMemory } from './object-memory';

describe('ObjectMemory', () => {
  it('keeps each slot apart and drops every slot of an object in one forget', () => {
    const memory = new ObjectMemory();
    const backoff = memory.slot<number>('backoff');
    const seen = memory.slot<string>('seen');
    backoff.set('ns/a', 3);
    seen.set('ns/a', 'v1');
    seen.set('ns/b', 'v2');
    expect(backoff.get('ns/a')).toBe(3);
    expect(seen.get('ns/a')).toBe('v1');
    expect(backoff.has('ns/b')).toBe(false);
    expect(memory.size).toBe(2);

    memory.forget('ns/a');
    expect(backoff.has('ns/a')).toBe(false);
    expect(seen.has('ns/a')).toBe(false);
    expect(seen.get('ns/b')).toBe('v2');
    expect(memory.size).toBe(1);
  });

  it('holds no entry for an object whose every slot was deleted', () => {
    const memory = new ObjectMemory();
    const slot = memory.slot<number>('n');
    slot.set('ns/a', 1);
    expect(slot.delete('ns/a')).toBe(true);
    expect(slot.delete('ns/a')).toBe(false);
    expect(memory.size).toBe(0);
  });

  it('runs a slot’s onForget for what it held, so state outside memory goes too', () => {
    const memory = new ObjectMemory();
    const released: string[] = [];
    const series = memory.slot<string>('series', (key, value) => released.push(`${key}=${value}`));
    series.set('ns/a', 'labels');
    memory.forget('ns/a');
    memory.forget('ns/a');
    expect(released).toEqual(['ns/a=labels']);
  });

  it('releases state kept outside it for any forgotten key, whether or not a slot held something', () => {
    const memory = new ObjectMemory();
    const removed: string[] = [];
    memory.onForget((key) => removed.push(key));
    memory.slot<number>('n').set('ns/a', 1);
    memory.forget('ns/a');
    memory.forget('ns/b');
    expect(removed).toEqual(['ns/a', 'ns/b']);
  });
});
