import { integrityHash } from '@aro/api';
import { isUpstreamIntegrityHash } from './upstream-adoption';

describe('isUpstreamIntegrityHash', () => {
  it("tells upstream's hash from ARO's", () => {
    expect(isUpstreamIntegrityHash(integrityHash({ runnerScaleSetId: 1 }))).toBe(false);
    // rand.SafeEncodeString of an FNV-32a, as upstream's hash.ComputeTemplateHash writes it.
    expect(isUpstreamIntegrityHash('5d7f9c8b64')).toBe(true);
    expect(isUpstreamIntegrityHash(undefined)).toBe(false);
    expect(isUpstreamIntegrityHash('')).toBe(false);
  });
});
