import type { KubeObject } from '../client/types';
import { Expectations } from './expectations';

const named = (name: string, deleting = false): KubeObject => ({
  metadata: { name, deletionTimestamp: deleting ? new Date() : undefined },
});

describe('Expectations', () => {
  it('waits for a created object until the cache shows it or the bound passes', () => {
    let now = 1_000;
    const expectations = new Expectations(30_000, () => now);
    expect(expectations.pendingMs('ns/set', [])).toBe(0);
    expectations.expectCreation('ns/set', 'a');
    now += 10_000;
    expect(expectations.pendingMs('ns/set', [])).toBe(20_000);
    expect(expectations.pendingMs('ns/set', [named('a')])).toBe(0);
    expectations.expectCreation('ns/set', 'a');
    now += 31_000;
    expect(expectations.pendingMs('ns/set', [])).toBe(0);
  });

  it('waits for a deleted object until the cache shows it gone or marked for deletion', () => {
    const now = 0;
    const expectations = new Expectations(30_000, () => now);
    expectations.expectDeletion('ns/set', 'a');
    expectations.expectDeletion('ns/set', 'b');
    expect(expectations.pendingMs('ns/set', [named('a'), named('b')])).toBe(30_000);
    expect(expectations.pendingMs('ns/set', [named('a', true), named('b')])).toBe(30_000);
    expect(expectations.pendingMs('ns/set', [named('a')])).toBe(0);
    expectations.expectCreation('ns/set', 'c');
    expectations.forget('ns/set');
    expect(expectations.pendingMs('ns/set', [])).toBe(0);
  });
});
