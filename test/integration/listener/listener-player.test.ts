import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import { ListenerDefaults, listenerConfigSecretName } from '@aro/api';
import { PodKind, SecretKind } from '@aro/kube';
import type { RunningSimulator } from '../../../apps/simulator/src';
import { waitFor } from '../../harness';
import { ListenerPlayer } from '../../harness/listener-player';
import { ListenerFixture, listenerFixture, startListenerTestSimulator } from './fixture';

/**
 * The listener-pod player the end-to-end suite relies on: a pod shaped like the AutoscalingListener
 * controller's (a `listener` container, the config Secret mounted) is run as the real listener process.
 */
describe('The listener-pod player', () => {
  let sim: RunningSimulator;
  let fx: ListenerFixture | undefined;
  let player: ListenerPlayer | undefined;

  beforeAll(async () => {
    sim = await startListenerTestSimulator();
  });
  afterAll(async () => {
    await sim?.stop();
  });
  afterEach(async () => {
    await player?.stop();
    await fx?.stopAll();
    fx = undefined;
  });

  it('runs a listener pod as the listener process, marks it Running, and SIGTERMs it when the pod goes', async () => {
    fx = await listenerFixture(sim, { minRunners: 1 });
    const listenerName = 'arc-set-listener';
    await fx.kube.create<V1Secret>(SecretKind, {
      metadata: { name: listenerConfigSecretName(listenerName), namespace: fx.namespace },
      stringData: { [ListenerDefaults.configSecretKey]: JSON.stringify(fx.config) },
    });
    await fx.kube.create<V1Pod>(PodKind, {
      metadata: { name: listenerName, namespace: fx.namespace },
      spec: {
        restartPolicy: 'Never',
        containers: [
          {
            name: 'listener',
            image: 'aro',
            command: [...ListenerDefaults.command],
            env: [{ name: 'LISTENER_CONFIG_PATH', value: ListenerDefaults.configPath }],
            volumeMounts: [{ name: 'config', mountPath: '/etc/gha-listener', readOnly: true }],
          },
        ],
        volumes: [{ name: 'config', secret: { secretName: listenerConfigSecretName(listenerName) } }],
      },
    });
    player = ListenerPlayer.start({ namespace: fx.namespace });
    const session = await waitFor(() => sim.sessions().find((s) => s.scaleSetId === fx!.scaleSetId), {
      description: 'the played listener to open its session',
      timeoutMs: 60_000,
    });
    expect(session.ownerName).toBe(listenerName);
    const pod = await fx.kube.get<V1Pod>(PodKind, fx.namespace, listenerName);
    expect(pod.status?.phase).toBe('Running');
    await fx.waitForSpec((s) => s.replicas === 1, 'the played listener scaling to minRunners');

    await fx.kube.delete(PodKind, fx.namespace, listenerName);
    await waitFor(() => player!.history[0]?.exitCode === 0, {
      description: 'the listener process to exit 0 after SIGTERM',
      timeoutMs: 30_000,
    });
    expect(sim.sessions().filter((s) => s.scaleSetId === fx!.scaleSetId)).toEqual([]);
  });
});
