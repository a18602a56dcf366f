import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import { ListenerDefaults, listenerConfigSecretName, type ListenerConfig } from '@aro/api';
import { KubeClient, PodKind, SecretKind } from '@aro/kube';
import type { ListenerPodPlayerOptions } from '../../harness/listener-pod-player';
import {
  ListenerPodPlayer,
  createTestNamespace,
  processExists,
  testKubeConfig,
  waitFor,
} from '../../harness';
import { freePort } from '../../harness/ports';

// A stand-in for apps/listener: it records the configuration it was given next to the config file,
// then runs until SIGTERM, or exits 3 at once when its scale set is named "exits".
const FAKE_LISTENER = `
const fs = require('node:fs');
const path = require('node:path');
const file = process.env.LISTENER_CONFIG_PATH;
const config = JSON.parse(fs.readFileSync(file, 'utf8'));
fs.writeFileSync(path.join(path.dirname(file), 'seen.json'), JSON.stringify({ config, kubeconfig: process.env.KUBECONFIG }));
if (config.runner_scale_set_name === 'exits') process.exit(3);
process.on('SIGTERM', () => process.exit(0));
setInterval(() => undefined, 1000);
`;

describe('ListenerPodPlayer', () => {
  let dir: string;
  let player: ListenerPodPlayer | undefined;
  const kube = new KubeClient(testKubeConfig());
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'aro-listener-player-'));
    writeFileSync(join(dir, 'fake-listener.js'), FAKE_LISTENER);
  });
  afterEach(async () => {
    await player?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** What the AutoscalingListener controller makes: the config secret and a pod mounting it. */
  async function listenerPod(namespace: string, name: string, scaleSetName: string): Promise<void> {
    const config: ListenerConfig = {
      configure_url: 'http://127.0.0.1:8910/octo',
      github_token: 'ghp_simulator',
      ephemeral_runner_set_namespace: 'arc-runners',
      ephemeral_runner_set_name: scaleSetName,
      max_runners: 3,
      min_runners: 0,
      runner_scale_set_id: 1,
      runner_scale_set_name: scaleSetName,
      metrics_addr: ListenerDefaults.metricsAddr,
    };
    await kube.create<V1Secret>(SecretKind, {
      metadata: { name: listenerConfigSecretName(name), namespace },
      stringData: { [ListenerDefaults.configSecretKey]: JSON.stringify(config) },
    });
    await kube.create<V1Pod>(PodKind, {
      metadata: { name, namespace },
      spec: {
        serviceAccountName: name,
        restartPolicy: 'Never',
        containers: [
          {
            name: 'listener',
            image: 'aro:dev',
            command: [...ListenerDefaults.command],
            env: [{ name: 'LISTENER_CONFIG_PATH', value: ListenerDefaults.configPath }],
            volumeMounts: [{ name: 'config', mountPath: '/etc/gha-listener', readOnly: true }],
          },
        ],
        volumes: [{ name: 'config', secret: { secretName: listenerConfigSecretName(name) } }],
      },
    });
  }

  function start(
    namespace: string,
    extra: Pick<ListenerPodPlayerOptions, 'kubeconfigForPod' | 'log'> = {},
  ): ListenerPodPlayer {
    player = new ListenerPodPlayer({
      ...extra,
      kubeConfig: testKubeConfig(),
      kubeconfigPath: '/path/to/kubeconfig',
      namespace,
      listenerMain: join(dir, 'fake-listener.js'),
      workDir: join(dir, 'work'),
      freePort,
      pollIntervalMs: 100,
    }).start();
    return player;
  }

  const phase = async (namespace: string, name: string): Promise<string | undefined> =>
    (await kube.get<V1Pod>(PodKind, namespace, name)).status?.phase;

  it('runs the listener with the pod config, marks the pod Running, and stops it when the pod is deleted', async () => {
    const namespace = await createTestNamespace('lpp');
    const p = start(namespace);
    await listenerPod(namespace, 'sandbox-listener', 'sandbox');
    await waitFor(async () => (await phase(namespace, 'sandbox-listener')) === 'Running', {
      description: 'the listener pod to be Running',
      timeoutMs: 60_000,
    });
    const [played] = p.running();
    expect(played).toMatchObject({ pod: 'sandbox-listener', namespace });
    const folder = join(dir, 'work', readdirSync(join(dir, 'work'))[0]);
    const seen = await waitFor(
      () =>
        existsSync(join(folder, 'seen.json')) && JSON.parse(readFileSync(join(folder, 'seen.json'), 'utf8')),
      { description: 'the listener to read its config', timeoutMs: 60_000 },
    );
    expect(seen.kubeconfig).toBe('/path/to/kubeconfig');
    expect(seen.config).toMatchObject({ runner_scale_set_name: 'sandbox', max_runners: 3 });
    // Each listener serves its metrics on a loopback port of its own instead of the pod's :8080.
    expect(seen.config.metrics_addr).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(played.metricsUrl).toBe(`http://${seen.config.metrics_addr}/metrics`);

    await kube.delete(PodKind, namespace, 'sandbox-listener');
    await waitFor(() => !processExists(played.process.pid), {
      description: 'the listener process to stop',
      timeoutMs: 60_000,
    });
    await waitFor(
      async () =>
        !(await kube.list<V1Pod>(PodKind, { namespace })).some(
          (pod) => pod.metadata?.name === 'sandbox-listener',
        ),
      { description: 'the pod deletion to finish', timeoutMs: 60_000 },
    );
  });

  it('marks the pod Failed when the listener exits non-zero, and when it is killed', async () => {
    const namespace = await createTestNamespace('lpp');
    const p = start(namespace);
    await listenerPod(namespace, 'exits-listener', 'exits');
    await waitFor(async () => (await phase(namespace, 'exits-listener')) === 'Failed', {
      description: 'the pod of a listener that exited 3 to be Failed',
      timeoutMs: 60_000,
    });
    const pod = await kube.get<V1Pod>(PodKind, namespace, 'exits-listener');
    expect(pod.status?.containerStatuses?.[0]?.state?.terminated?.exitCode).toBe(3);

    await listenerPod(namespace, 'killed-listener', 'killed');
    await waitFor(async () => (await phase(namespace, 'killed-listener')) === 'Running', {
      description: 'the second listener pod to be Running',
      timeoutMs: 60_000,
    });
    const victim = await p.killOne();
    expect(victim?.pod).toBe('killed-listener');
    await waitFor(async () => (await phase(namespace, 'killed-listener')) === 'Failed', {
      description: 'the pod of a killed listener to be Failed',
      timeoutMs: 60_000,
    });
  });

  /*
   * A pod the player cannot start (here its identity cannot be made, as when a long scale-set name gave
   * a certificate CN over 64 characters) used to throw out of the player's whole pass: no listener pod
   * after it was started, finished or deleted, and the reason showed only at the end.
   */
  it('goes on with the other pods when one cannot be started, and tells why at once', async () => {
    const namespace = await createTestNamespace('lpp');
    const told: string[] = [];
    const p = start(namespace, {
      kubeconfigForPod: async (pod) => {
        if (pod.metadata?.name === 'broken-listener') throw new Error('no identity for this one');
        return '/path/to/kubeconfig';
      },
      log: (line) => told.push(line),
    });
    await listenerPod(namespace, 'broken-listener', 'broken');
    await waitFor(() => p.errors.length > 0, { description: 'the broken pod to fail', timeoutMs: 60_000 });
    await listenerPod(namespace, 'fine-listener', 'fine');
    await waitFor(async () => (await phase(namespace, 'fine-listener')) === 'Running', {
      description: 'the pod after the broken one to be Running',
      timeoutMs: 60_000,
    });
    expect(p.running().map((l) => l.pod)).toEqual(['fine-listener']);
    // Told once, naming the pod and the reason, though the player tried it on every pass.
    expect(p.errors).toEqual([`listener pod ${namespace}/broken-listener: no identity for this one`]);
    expect(told.filter((l) => l.includes('broken-listener'))).toEqual([
      `!!! listener pod ${namespace}/broken-listener: no identity for this one`,
    ]);
    expect(await phase(namespace, 'broken-listener')).toBe('Pending');
  });
});
