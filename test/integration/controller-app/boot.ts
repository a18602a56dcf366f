import type { AddressInfo } from 'node:net';
import type { INestApplication } from '@nestjs/common';
import type { KubeConfig, V1Secret } from '@kubernetes/client-node';
import { EphemeralRunner, EphemeralRunnerKind } from '@aro/api';
import { KubeClient, Manager, SecretKind, isAlreadyExists } from '@aro/kube';
import { DEFAULT_PAT, RunningSimulator } from '../../../apps/simulator/src';
import { ControllerConfig, loadControllerConfig } from '../../../apps/controller/src/config';
import { startControllerApp } from '../../../apps/controller/src/bootstrap';
import { testKubeConfig } from '../../harness';
import { createScaleSet, testLogger } from '../ephemeral-runner/fixture';

export interface BootedApp {
  app: INestApplication;
  manager: Manager;
  url: string;
  config: ControllerConfig;
  get(path: string): Promise<{ status: number; body: string }>;
  close(): Promise<void>;
}

/**
 * Boots the controller app as main.ts does (extensions from ARO_EXTENSIONS in `env` included), on a
 * free port, against the test control plane.
 */
export async function bootControllerApp(
  env: Record<string, string>,
  opts: {
    kubeConfig?: KubeConfig;
    onLeadershipLost?: (m: Manager) => void;
  } = {},
): Promise<BootedApp> {
  const config = loadControllerConfig({ PROBE_PORT: '0', PROBE_BIND_ADDRESS: '127.0.0.1', ...env });
  const { app, manager } = await startControllerApp({
    config,
    logger: testLogger(),
    kubeConfig: opts.kubeConfig ?? testKubeConfig(),
    onLeadershipLost: opts.onLeadershipLost ?? (() => undefined),
  });
  const port = (app.getHttpServer().address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;
  return {
    app,
    manager,
    url,
    config,
    async get(path) {
      const res = await fetch(url + path);
      return { status: res.status, body: await res.text() };
    },
    close: () => app.close(),
  };
}

/**
 * What a runner set would leave in a namespace for the app to act on: the GitHub secret `gh` (once)
 * and an EphemeralRunner of a fresh scale set on the simulator.
 */
export async function createRunnerForApp(
  sim: RunningSimulator,
  namespace: string,
  name: string,
  labels: Record<string, string> = {},
): Promise<EphemeralRunner> {
  const kube = new KubeClient(testKubeConfig());
  await kube
    .create<V1Secret>(SecretKind, {
      metadata: { name: 'gh', namespace },
      stringData: { github_token: DEFAULT_PAT },
    })
    .catch((err: unknown) => {
      if (!isAlreadyExists(err)) throw err;
    });
  return kube.create<EphemeralRunner>(EphemeralRunnerKind, {
    apiVersion: 'actions.github.com/v1alpha1',
    kind: 'EphemeralRunner',
    metadata: { name, namespace, labels },
    spec: {
      githubConfigUrl: sim.configUrl({ org: 'octo' }),
      githubConfigSecret: 'gh',
      runnerScaleSetId: await createScaleSet(sim, `app-${namespace}-${name}`),
      spec: { containers: [{ name: 'runner', image: 'r' }] },
    },
  });
}
