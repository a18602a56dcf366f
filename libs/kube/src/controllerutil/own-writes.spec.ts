import { OwnWrites } from './own-writes';

describe('OwnWrites', () => {
  it('reports a cached copy the controller already wrote past as behind, until the cache moves on', () => {
    const now = 0;
    const writes = new OwnWrites(10_000, () => now);
    writes.record('ns/r', '10', '11');
    writes.record('ns/r', '11', '12');
    expect(writes.behindMs('ns/r', '10')).toBe(10_000);
    expect(writes.behindMs('ns/r', '11')).toBe(10_000);
    expect(writes.behindMs('ns/r', '12')).toBe(0);
    // Once the cache showed a newer version, the old ones are forgotten.
    expect(writes.behindMs('ns/r', '10')).toBe(0);
  });

  it('ignores a write that produced no new version, and gives up after its bound', () => {
    let now = 0;
    const writes = new OwnWrites(10_000, () => now);
    writes.record('ns/r', '10', '10');
    expect(writes.behindMs('ns/r', '10')).toBe(0);
    writes.record('ns/r', '10', '11');
    now = 10_001;
    expect(writes.behindMs('ns/r', '10')).toBe(0);
  });
});
