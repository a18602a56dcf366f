import { Annotations, EphemeralRunnerSet, integrityHash, runnerSpecHash } from '@aro/api';
import { isUpstreamIntegrityHash, storedSpecHash } from './upstream-adoption';

describe('isUpstreamIntegrityHash', () => {
  it("tells upstream's hash from ARO's", () => {
    expect(isUpstreamIntegrityHash(integrityHash({ runnerScaleSetId: 1 }))).toBe(false);
    // rand.SafeEncodeString of an FNV-32a, as upstream's hash.ComputeTemplateHash writes it.
    expect(isUpstreamIntegrityHash('5d7f9c8b64')).toBe(true);
    expect(isUpstreamIntegrityHash(undefined)).toBe(false);
    expect(isUpstreamIntegrityHash('')).toBe(false);
  });
});

describe('storedSpecHash', () => {
  // A template with an empty object, whose as-written and by-meaning hashes differ.
  const spec = {
    githubConfigUrl: 'https://github.com/octo',
    githubConfigSecret: 's',
    runnerScaleSetId: 1,
    spec: { containers: [{ name: 'runner', image: 'r', resources: {} }] },
  };
  const set = (stored?: string): EphemeralRunnerSet => ({
    metadata: { annotations: stored === undefined ? {} : { [Annotations.integrityHash]: stored } },
    spec: { replicas: 0, patchID: 0, ephemeralRunnerSpec: spec },
  });

  it('hashes the runner spec by meaning', () => {
    expect(runnerSpecHash(spec)).not.toBe(integrityHash(spec));
    expect(storedSpecHash(set())).toBe(runnerSpecHash(spec));
    expect(storedSpecHash(set('0123456789abcdef'))).toBe(runnerSpecHash(spec));
  });

  it("keeps an earlier ARO's as-written hash of the very same spec: an upgrade replaces no runner", () => {
    expect(storedSpecHash(set(integrityHash(spec)))).toBe(integrityHash(spec));
  });
});
