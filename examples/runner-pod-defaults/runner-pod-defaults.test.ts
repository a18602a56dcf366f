import type { V1Pod } from '@kubernetes/client-node';
import { KubeClient, PodKind, isAlreadyExists } from '@aro/kube';
import type { RunningSimulator } from '../../apps/simulator/src';
import { createTestNamespace, testKubeConfig, waitFor } from '../../test/harness';
import { BootedApp, bootControllerApp, createRunnerForApp } from '../../test/integration/controller-app/boot';
import { startTestSimulator } from '../../test/integration/ephemeral-runner/fixture';
import { COST_CENTER_LABEL, RUNNER_PRIORITY_CLASS } from './runner-pod-defaults.module';

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

  it('loaded through ARO_EXTENSIONS, labels runner pods with their cost center and sets a priority class', async () => {
    const namespace = await createTestNamespace('example-pod');
    app = await bootControllerApp({
      WATCH_NAMESPACE: namespace,
      LEADER_ELECTION: 'false',
      ARO_EXTENSIONS: './examples/runner-pod-defaults/runner-pod-defaults.module',
    });
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
        { metadata: { name: RUNNER_PRIORITY_CLASS }, value: 1000 } as never,
      )
      .catch((err: unknown) => {
        if (!isAlreadyExists(err)) throw err;
      });
    await createRunnerForApp(sim, namespace, 'labelled', { [COST_CENTER_LABEL]: 'platform' });
    const pod = await waitFor(() => kube.get<V1Pod>(PodKind, namespace, 'labelled').catch(() => undefined), {
      description: 'the runner pod',
    });
    expect(pod.metadata?.labels?.[COST_CENTER_LABEL]).toBe('platform');
    expect(pod.spec?.priorityClassName).toBe(RUNNER_PRIORITY_CLASS);
  });
});
