import { upstreamListenerName } from './upstream-meta';

/*
 * The migration and switch tests name upstream's listener with upstreamListenerName, restated from
 * upstream's source. These names were printed by upstream's own code: `scaleSetListenerName` and
 * `hashSuffix` cut verbatim from controllers/actions.github.com/resourcebuilder.go with its hash
 * package (hash/fnv.go and k8s.io/apimachinery's rand.SafeEncodeString), at the
 * gha-runner-scale-set-0.14.2 tag and at main (2ee6b3b8), built into a throwaway Go program and run
 * with Go 1.26. Both refs printed the same names. Nothing here runs against the cluster.
 */
describe("upstream's listener name, as the tests restate it", () => {
  it.each([
    ['arc-runners', 'arc-runners', '', 'https://github.com/octo', 'arc-runners-6c977848-listener'],
    ['arc-runners', 'arc-systems', '', 'https://github.com/octo', 'arc-runners-68766589-listener'],
    [
      'linux-x64',
      'ci',
      'builders',
      'https://github.example.com/enterprises/acme',
      'linux-x64-958d6ff5-listener',
    ],
    ['short', 'ns-165', '', 'https://github.com/octo', 'short-97bb9f6-listener'],
  ])('%s in %s (group %j, %s) is %s', (set, namespace, group, url, expected) => {
    expect(upstreamListenerName(set, namespace, group, url)).toBe(expected);
  });
});
