import type { EphemeralRunnerSpec } from '@aro/api';

/*
 * `spec.ephemeralRunnerSpec` of an EphemeralRunnerSet exactly as upstream's controller serializes it,
 * for the scale set the gha-runner-scale-set chart renders with its default values (no container
 * mode): the runner container with its image and command, `restartPolicy: Never` and the chart's
 * no-permission ServiceAccount.
 *
 * How it was made: a throwaway Go test dropped into upstream's controllers/actions.github.com (at the
 * gha-runner-scale-set-0.14.2 tag, and again on main after #4516: the same bytes) json.Unmarshal'ed
 * that AutoscalingRunnerSet (scale set id 1, config URL https://github.com/octo, secret
 * arc-runners-gha-rs-github-secret), called ResourceBuilder.newEphemeralRunnerSet, and printed
 * json.Marshal of the set's spec; the line below is its `ephemeralRunnerSpec`, pasted as printed.
 * newEphemeralRunner copies the same value into each EphemeralRunner's spec.
 *
 * Note what ARO's rendering of the same template does not have: `metadata: {}` (the pod template's
 * ObjectMeta, a struct Go always writes) and `resources: {}` (the container's ResourceRequirements).
 */
const AS_UPSTREAM_WROTE_IT =
  '{"githubConfigUrl":"https://github.com/octo","githubConfigSecret":"arc-runners-gha-rs-github-secret",' +
  '"runnerScaleSetId":1,"metadata":{},"spec":{"containers":[{"name":"runner",' +
  '"image":"ghcr.io/actions/actions-runner:latest","command":["/home/runner/run.sh"],"resources":{}}],' +
  '"restartPolicy":"Never","serviceAccountName":"arc-runners-gha-rs-no-permission"}}';

/** The chart's runner pod template (default values), as the AutoscalingRunnerSet carries it. */
export function chartRunnerTemplate(serviceAccountName: string) {
  return {
    spec: {
      containers: [
        { name: 'runner', image: 'ghcr.io/actions/actions-runner:latest', command: ['/home/runner/run.sh'] },
      ],
      restartPolicy: 'Never',
      serviceAccountName,
    },
  };
}

/**
 * Upstream's serialization above for this test's scale set: the same shape, with this scale set's
 * values (config URL, secret, id, ServiceAccount) put in place of the printed ones.
 */
export function upstreamSerializedRunnerSpec(values: {
  githubConfigUrl: string;
  githubConfigSecret: string;
  runnerScaleSetId: number;
  serviceAccountName: string;
}): EphemeralRunnerSpec {
  const spec = JSON.parse(AS_UPSTREAM_WROTE_IT) as EphemeralRunnerSpec & {
    spec: { serviceAccountName?: string };
  };
  spec.githubConfigUrl = values.githubConfigUrl;
  spec.githubConfigSecret = values.githubConfigSecret;
  spec.runnerScaleSetId = values.runnerScaleSetId;
  spec.spec.serviceAccountName = values.serviceAccountName;
  return spec;
}
