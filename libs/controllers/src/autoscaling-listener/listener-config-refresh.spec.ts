import { ObjectMemory } from '@aro/kube';
import { ListenerConfigRefresh } from './listener-config-refresh';

describe('ListenerConfigRefresh', () => {
  let now = 1_000;
  const memory = new ObjectMemory();
  const refresh = new ListenerConfigRefresh(60_000, () => now, memory.slot('config builds'));

  it('builds a new listener, then only on a change, a missing config or the interval', () => {
    expect(refresh.reasonToBuild('ns/a', 'inputs-1', undefined)).toBe('new');
    refresh.recordBuilt('ns/a', 'inputs-1', 'hash-1');
    expect(refresh.reasonToBuild('ns/a', 'inputs-1', 'hash-1')).toBeUndefined();
    expect(refresh.reasonToBuild('ns/a', 'inputs-2', 'hash-1')).toBe('changed');
    expect(refresh.reasonToBuild('ns/a', 'inputs-1', undefined)).toBe('missing');
    expect(refresh.reasonToBuild('ns/a', 'inputs-1', 'edited')).toBe('missing');
    expect(refresh.refreshDueInMs('ns/a')).toBe(60_000);
    now += 60_000;
    expect(refresh.reasonToBuild('ns/a', 'inputs-1', 'hash-1')).toBe('refresh');
    memory.forget('ns/a');
    expect(refresh.refreshDueInMs('ns/a')).toBeUndefined();
    expect(refresh.reasonToBuild('ns/a', 'inputs-1', 'hash-1')).toBe('new');
  });
});
