import { CreationExpectations } from './creation-expectations';

describe('CreationExpectations', () => {
  it('takes a cache miss for a just-created object as lag until it is observed or the bound passes', () => {
    let now = 1_000;
    const expectations = new CreationExpectations(30_000, () => now);
    expect(expectations.remainingMs('ns/a')).toBe(0);
    expectations.expect('ns/a');
    now += 10_000;
    expect(expectations.remainingMs('ns/a')).toBe(20_000);
    expectations.observed('ns/a');
    expect(expectations.remainingMs('ns/a')).toBe(0);
    expectations.expect('ns/a');
    now += 31_000;
    expect(expectations.remainingMs('ns/a')).toBe(0);
  });
});
