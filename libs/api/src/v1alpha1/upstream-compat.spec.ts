import { ephemeralRunnerSetFinalizerNames, meaningOf, runnerSpecHash } from './upstream-compat';

/*
 * `spec.ephemeralRunnerSpec` of an EphemeralRunnerSet as upstream's controller creates it, byte for
 * byte: printed by a throwaway Go test placed in upstream's controllers/actions.github.com (at the
 * gha-runner-scale-set-0.14.2 tag and on main, the same output) that unmarshals an AutoscalingRunnerSet
 * as the gha-runner-scale-set chart renders its default values, calls ResourceBuilder's
 * newEphemeralRunnerSet and json.Marshal's the result. Note `metadata: {}` and `resources: {}`.
 */
const UPSTREAM_WRITTEN = JSON.parse(
  '{"githubConfigUrl":"https://github.com/octo","githubConfigSecret":"arc-runners-gha-rs-github-secret",' +
    '"runnerScaleSetId":1,"metadata":{},"spec":{"containers":[{"name":"runner",' +
    '"image":"ghcr.io/actions/actions-runner:latest","command":["/home/runner/run.sh"],"resources":{}}],' +
    '"restartPolicy":"Never","serviceAccountName":"arc-runners-gha-rs-no-permission"}}',
) as unknown;

/** The same spec as ARO renders it from that AutoscalingRunnerSet (the template as the chart wrote it). */
const ARO_RENDERED = {
  githubConfigUrl: 'https://github.com/octo',
  githubConfigSecret: 'arc-runners-gha-rs-github-secret',
  runnerScaleSetId: 1,
  spec: {
    restartPolicy: 'Never',
    serviceAccountName: 'arc-runners-gha-rs-no-permission',
    containers: [
      { name: 'runner', image: 'ghcr.io/actions/actions-runner:latest', command: ['/home/runner/run.sh'] },
    ],
  },
};

describe('runner specs compared by meaning', () => {
  it("hashes upstream's serialization of a spec as ARO's rendering of the same spec", () => {
    expect(runnerSpecHash(UPSTREAM_WRITTEN)).toBe(runnerSpecHash(ARO_RENDERED));
  });

  it('drops nulls, empty objects and empty lists at any depth, and ignores key order', () => {
    expect(meaningOf({ b: { c: null, d: [] }, a: [{ e: {} }, 'x'], f: 0, g: false, h: '' })).toEqual({
      a: [{}, 'x'],
      f: 0,
      g: false,
      h: '',
    });
    expect(runnerSpecHash({ spec: { a: 1, b: 2 } })).toBe(runnerSpecHash({ spec: { b: 2, a: 1 } }));
  });

  it('still tells real changes apart: a value, a list order, a zero pointer field', () => {
    const withImage = (image: string) => ({ spec: { containers: [{ name: 'runner', image }] } });
    expect(runnerSpecHash(withImage('a'))).not.toBe(runnerSpecHash(withImage('b')));
    expect(runnerSpecHash({ env: [{ name: 'A' }, { name: 'B' }] })).not.toBe(
      runnerSpecHash({ env: [{ name: 'B' }, { name: 'A' }] }),
    );
    expect(runnerSpecHash({ securityContext: { runAsUser: 0 } })).not.toBe(runnerSpecHash({}));
  });
});

describe("the EphemeralRunnerSet finalizer of each upstream version (upstream's source)", () => {
  // controllers/actions.github.com/ephemeralrunnerset_controller.go: ephemeralRunnerSetFinalizerName
  // at the gha-runner-scale-set-0.14.2 tag; EphemeralRunnerSetFinalizerName on main (#4516).
  const RELEASE_0_14_2 = 'ephemeralrunner.actions.github.com/finalizer';
  const MAIN = 'ephemeralrunnerset.actions.github.com/finalizer';

  it('writes the name the chosen version adds and removes, and knows the other as an alias', () => {
    expect(ephemeralRunnerSetFinalizerNames('0.14.2')).toEqual({ name: RELEASE_0_14_2, aliases: [MAIN] });
    expect(ephemeralRunnerSetFinalizerNames('main')).toEqual({ name: MAIN, aliases: [RELEASE_0_14_2] });
  });
});
