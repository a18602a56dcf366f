import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAllYaml } from '@kubernetes/client-node';
import {
  AutoscalingRunnerSetKind,
  EphemeralRunner,
  EphemeralRunnerKind,
  type AutoscalingRunnerSet,
} from '@aro/api';
import { KubeObject, SecretKind } from '@aro/kube';
import { RunnerPlayer, testKubeConfig, waitFor } from '../../harness';
import { controllerSuite } from '../ephemeral-runner/fixture';

const MANIFESTS = join(__dirname, '..', '..', '..', 'examples', 'manifests');
const KINDS = {
  Secret: SecretKind,
  AutoscalingRunnerSet: AutoscalingRunnerSetKind,
  EphemeralRunner: EphemeralRunnerKind,
};

function manifests(): Array<KubeObject & { kind: keyof typeof KINDS }> {
  return readdirSync(MANIFESTS)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .flatMap(
      (f) =>
        loadAllYaml(readFileSync(join(MANIFESTS, f), 'utf8')) as Array<
          KubeObject & { kind: keyof typeof KINDS }
        >,
    );
}

/**
 * examples/manifests applied as a person would against the sandbox: into the test's namespace, the
 * simulator's URL and scale set swapped for this suite's (the files name the sandbox's 127.0.0.1:8910
 * and scale set 1). The apiserver accepts every object (CRD schema), and the lone EphemeralRunner is run
 * by the EphemeralRunner controller through a job to its deletion.
 */
describe('examples/manifests', () => {
  const suite = controllerSuite();

  it('holds a credentials Secret, an AutoscalingRunnerSet and a lone EphemeralRunner', () => {
    expect(manifests().map((m) => m.kind)).toEqual(['Secret', 'AutoscalingRunnerSet', 'EphemeralRunner']);
  });

  it('applies, and the lone EphemeralRunner runs a job and is gone', async () => {
    const f = await suite.start();
    const player = new RunnerPlayer({
      kubeConfig: testKubeConfig(),
      namespace: f.namespace,
      service: suite.sim,
      jobDurationMs: 200,
      pollIntervalMs: 100,
    }).start();
    try {
      for (const object of manifests()) {
        object.metadata = { ...object.metadata, namespace: f.namespace };
        const spec = (object as { spec?: { githubConfigUrl?: string; runnerScaleSetId?: number } }).spec;
        if (spec?.githubConfigUrl) spec.githubConfigUrl = f.configUrl;
        if (object.kind === 'EphemeralRunner' && spec) spec.runnerScaleSetId = f.scaleSetId;
        await f.kube.create(KINDS[object.kind], object);
      }
      const set = await f.kube.get<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, f.namespace, 'example');
      expect(set.spec).toMatchObject({
        githubConfigSecret: 'example-github-config',
        minRunners: 0,
        maxRunners: 3,
      });

      const registration = await waitFor(() => suite.sim.runner('example-runner'), {
        description: 'the registration of example-runner',
        timeoutMs: 60_000,
      });
      expect(registration.scaleSetId).toBe(f.scaleSetId);
      const job = suite.sim.enqueueJob({ scaleSetId: f.scaleSetId });
      suite.sim.assignJobToRunner('example-runner', job.jobId);
      await f.waitForRunner(
        'example-runner',
        (r: EphemeralRunner | undefined) => r === undefined,
        'deleted',
        60_000,
      );
      expect(suite.sim.job(job.jobId)).toMatchObject({ state: 'completed', result: 'succeeded' });
      expect(suite.sim.runner('example-runner')).toBeUndefined();
    } finally {
      await player.stop();
    }
  });
});
