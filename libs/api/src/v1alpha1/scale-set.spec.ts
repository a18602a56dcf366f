import {
  autoscalingListenerName,
  fnv32aHex,
  safeEncodedFnv32a,
  integrityHash,
  legacyRunnerProxySecretName,
  runnerProxySecretName,
  trimLabelValue,
} from './scale-set';

describe('scale-set names and hashes', () => {
  it('hashes with 32-bit FNV-1a as Go does (known vectors)', () => {
    expect(fnv32aHex('')).toBe('811c9dc5');
    expect(fnv32aHex('a')).toBe('e40c292c');
    expect(fnv32aHex('foobar')).toBe('bf9cf968');
  });

  // Expected names from upstream's own `proxyEphemeralRunnerSetSecretName` (resourcebuilder.go, the
  // same body at the gha-runner-scale-set-0.14.2 tag and at main), cut into a throwaway Go program
  // with upstream's hash package and run on these inputs.
  it.each([
    ['set', 'ns', 'set-55ccfb58-runner-proxy'],
    ['arc-runners', 'arc-runners', 'arc-runners-754b578d-runner-proxy'],
    ['linux-x64', 'ci', 'linux-x64-5b57784d-runner-proxy'],
    ['k8s-runners', 'team-a', 'k8s-runners-b95f5b68-runner-proxy'],
    ['x', 'default', 'x-68c4584d-runner-proxy'],
  ])('names the runner proxy secret of %s in %s as upstream does: %s', (set, namespace, expected) => {
    expect(runnerProxySecretName(set, namespace)).toBe(expected);
  });

  it('keeps the earlier ARO name of the runner proxy secret for runners that still point at it', () => {
    expect(legacyRunnerProxySecretName('set', 'ns')).toBe(`set-${fnv32aHex('ns')}-runner-proxy`);
  });

  // Expected names come from upstream's own code, not from this one: `scaleSetListenerName` and
  // `hashSuffix` cut verbatim from controllers/actions.github.com/resourcebuilder.go and upstream's
  // hash package (hash/fnv.go, k8s.io/apimachinery's rand.SafeEncodeString), at the
  // gha-runner-scale-set-0.14.2 tag and at main (2ee6b3b8), built into a throwaway Go program and run
  // with Go 1.26 on these inputs. Both refs gave the same names.
  it.each([
    ['arc-runners', 'arc-runners', '', 'https://github.com/octo', 'arc-runners-6c977848-listener'],
    ['arc-runners', 'arc-runners', '', 'https://github.com/my-org', 'arc-runners-56b4bcfc-listener'],
    ['arc-runners', 'arc-systems', '', 'https://github.com/octo', 'arc-runners-68766589-listener'],
    ['set', 'ns', '', 'https://github.com/o', 'set-64dddd6b-listener'],
    [
      'linux-x64',
      'ci',
      'builders',
      'https://github.example.com/enterprises/acme',
      'linux-x64-958d6ff5-listener',
    ],
    ['k8s-runners', 'team-a', 'Default', 'https://github.com/acme/widgets', 'k8s-runners-79655db4-listener'],
    // The sum is 5366592: seven decimal digits, so the suffix has seven characters, not eight.
    ['short', 'ns-165', '', 'https://github.com/octo', 'short-97bb9f6-listener'],
    // Upstream does not shorten a long name; neither does ARO.
    [
      'a-very-long-scale-set-name-that-goes-on-and-on-and-on-for-a-while-longer-than-sixty-three',
      'runners',
      '',
      'https://github.com/octo',
      'a-very-long-scale-set-name-that-goes-on-and-on-and-on-for-a-while-longer-than-sixty-three-5876d859-listener',
    ],
  ])(
    'names the listener of %s in %s (group %j, %s) as upstream does: %s',
    (set, ns, group, url, expected) => {
      expect(autoscalingListenerName(set, ns, group, url)).toBe(expected);
    },
  );

  it('safe-encodes the FNV-1a sum as upstream hash.FNVHashString does (vectors from upstream’s Go)', () => {
    expect(safeEncodedFnv32a('')).toBe('65bb57b6b5');
    expect(safeEncodedFnv32a('a')).toBe('7d6b446664');
    expect(safeEncodedFnv32a('foobar')).toBe('7658c79c64');
  });

  it('gives equal values the same integrity hash whatever the key order, and different values different ones', () => {
    expect(integrityHash({ a: 1, b: { c: 2, d: 3 } })).toBe(integrityHash({ b: { d: 3, c: 2 }, a: 1 }));
    expect(integrityHash({ a: 1 })).not.toBe(integrityHash({ a: 2 }));
    expect(integrityHash({ a: 1, b: undefined })).toBe(integrityHash({ a: 1 }));
  });

  it('trims label values as upstream: over 63 characters to 58 plus -trim, else strips -_. at the ends', () => {
    expect(trimLabelValue('a'.repeat(64))).toBe(`${'a'.repeat(58)}-trim`);
    expect(trimLabelValue('_-org.')).toBe('org');
    expect(trimLabelValue('my-org')).toBe('my-org');
  });
});
