import { KubeClient, PodKind } from '@aro/kube';
import type { RunningSimulator } from '../../apps/simulator/src';
import { createTestNamespace, runnerContainerRunning, testKubeConfig, waitFor } from '../../test/harness';
import { BootedApp, bootControllerApp, createRunnerForApp } from '../../test/integration/controller-app/boot';
import { startTestSimulator } from '../../test/integration/ephemeral-runner/fixture';
import { COST_CENTER_LABEL } from './runner-transitions.module';

describe('The runner-transitions example extension', () => {
  let sim: RunningSimulator;
  let app: BootedApp | undefined;

  beforeAll(async () => {
    sim = await startTestSimulator();
  });
  afterAll(async () => {
    await app?.close();
    await sim?.stop();
  });

  it("loaded through ARO_EXTENSIONS, counts transitions per cost center on the app's /metrics", async () => {
    const namespace = await createTestNamespace('example-observer');
    app = await bootControllerApp({
      WATCH_NAMESPACE: namespace,
      LEADER_ELECTION: 'false',
      ARO_EXTENSIONS: './examples/runner-transitions/runner-transitions.module',
    });
    await createRunnerForApp(sim, namespace, 'observed', { [COST_CENTER_LABEL]: 'platform' });
    const kube = new KubeClient(testKubeConfig());
    await waitFor(
      () =>
        kube.get(PodKind, namespace, 'observed').then(
          () => true,
          () => false,
        ),
      { description: 'the runner pod' },
    );
    await runnerContainerRunning(namespace, 'observed');
    await waitFor(
      async () =>
        (await app!.get('/metrics')).body.includes(
          'example_runner_transitions_total{cost_center="platform",phase="Pending"} 1',
        ),
      { description: 'the Pending transition counted on /metrics' },
    );
  });
});
