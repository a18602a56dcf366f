import type { V1Pod } from '@kubernetes/client-node';
import { KubeClient, PodKind, isAlreadyExists } from '@aro/kube';
import type { RunningSimulator } from '../../apps/simulator/src';
import { createTestNamespace, runnerContainerRunning, testKubeConfig, waitFor } from '../../test/harness';
import { BootedApp, bootControllerApp, createRunnerForApp } from '../../test/integration/controller-app/boot';
import { startTestSimulator } from '../../test/integration/ephemeral-runner/fixture';
import { COST_CENTER_LABEL, RunnerPodDefaultsModule } from './runner-pod-defaults.module';

describe('The runner-pod-defaults example extension', () => {
  let sim: RunningSimulator;
  let app: BootedApp | undefined;

  beforeAll(async () => {
    sim = await startTestSimulator();
  });
  afterAll(async () => {
    await app?.close();
    await sim?.stop();
  });

  it('labels runner pods with their cost center, sets a priority class, and counts transitions', async () => {
    const namespace = await createTestNamespace('example');
    app = await bootControllerApp(
      { WATCH_NAMESPACE: namespace, LEADER_ELECTION: 'false' },
      { imports: [RunnerPodDefaultsModule] },
    );
    const kube = new KubeClient(testKubeConfig());
    await kube
      .create(
        {
          group: 'scheduling.k8s.io',
          version: 'v1',
          kind: 'PriorityClass',
          plural: 'priorityclasses',
          namespaced: false,
        },
        { metadata: { name: 'runner-default' }, value: 1000 } as never,
      )
      .catch((err: unknown) => {
        if (!isAlreadyExists(err)) throw err;
      });
    await createRunnerForApp(sim, namespace, 'labelled', { [COST_CENTER_LABEL]: 'platform' });
    const pod = await waitFor(() => kube.get<V1Pod>(PodKind, namespace, 'labelled').catch(() => undefined), {
      description: 'the runner pod',
    });
    expect(pod.metadata?.labels?.[COST_CENTER_LABEL]).toBe('platform');
    expect(pod.spec?.priorityClassName).toBe('runner-default');

    await runnerContainerRunning(namespace, 'labelled');
    await waitFor(
      async () =>
        (await app!.get('/metrics')).body.includes(
          'example_runner_transitions_total{cost_center="platform",phase="Pending"} 1',
        ),
      { description: 'the Pending transition counted' },
    );
  });
});
