import {
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  type KubernetesObject,
  type V1Deployment,
  type V1Pod,
} from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_PAT, startSimulator, type RunningSimulator } from '../../../apps/simulator/src';
import { CHARTS, render, type Manifest } from '../../integration/charts/helm-chart';
import type { ControlPlane } from '../control-plane';
import { freePort } from '../ports';
import { kubeRequest } from '../rest';
import { scaled } from '../time-scale';
import type { RealNode } from './real-node';

/**
 * The whole product on the real node, as a platform engineer installs it: both charts rendered by helm
 * and applied, the controller's replicas real pods of the image built from the Dockerfile (the kubelet
 * runs their probes), the listener pod the controller creates from its own spec, runner pods of the
 * runner image. GitHub is the simulator, in this process, reached from the node through a relay.
 */

export const CONTROLLER_NAMESPACE = 'arc-systems';
export const CONTROLLER_RELEASE = 'aro-controller';
export const RUNNER_NAMESPACE = 'arc-runners';
export const SCALE_SET_RELEASE = 'real-node';

export interface ProductOptions {
  minRunners?: number;
  maxRunners?: number;
  /** Extra controller chart values (merged over the ones set here). */
  controllerValues?: Record<string, unknown>;
  /**
   * Test-only fault switches armed in the controller's containers (fault-switches.ts says how they get
   * there and why that way), e.g. `['hang-on-sigusr2']`.
   */
  faultSwitches?: string[];
  /** Extra env of the runner container (e.g. RUNNER_JOB_SECONDS). */
  runnerEnv?: Record<string, string>;
  log: (line: string) => void;
  /** How long the controller replicas and the listener may take to be Ready; default 180 s. */
  readyTimeoutMs?: number;
}

export interface ProductOnNode {
  simulator: RunningSimulator;
  /** The simulator as pods reach it: `http://10.77.0.1:<port>`. */
  simulatorUrlInNode: string;
  kubeConfig: KubeConfig;
  controllerManifests: Manifest[];
  scaleSetManifests: Manifest[];
  scaleSetId: number;
  /** Seconds from install to both controller replicas and the listener pod Ready. */
  readySeconds: number;
  stop(): Promise<void>;
}

async function apply(kc: KubeConfig, manifests: readonly Manifest[]): Promise<void> {
  const api = KubernetesObjectApi.makeApiClient(kc);
  for (const manifest of manifests) {
    await api.patch(
      manifest as KubernetesObject,
      undefined,
      undefined,
      'aro-real-node',
      true,
      PatchStrategy.ServerSideApply,
    );
  }
}

async function ensureNamespace(kc: KubeConfig, name: string): Promise<void> {
  await apply(kc, [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name } } as Manifest]);
}

async function listPods(kc: KubeConfig, namespace: string, selector?: string): Promise<V1Pod[]> {
  const query = selector ? `?labelSelector=${encodeURIComponent(selector)}` : '';
  const res = await kubeRequest(kc, {
    path: `/api/v1/namespaces/${namespace}/pods${query}`,
    timeoutMs: 10_000,
  });
  if (res.status !== 200) throw new Error(`listing pods in ${namespace}: ${res.status}`);
  return (res.body as { items: V1Pod[] }).items;
}

export function podReady(pod: V1Pod): boolean {
  return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/** Thrown by a `waitUntil` check when what it sees cannot turn into what is awaited: the wait ends at once. */
export class FatalWait extends Error {}

export async function waitUntil(
  what: string,
  timeoutMs: number,
  check: () => Promise<string | true>,
): Promise<void> {
  // The bound is a quiet machine's; the run's one time scale stretches it on a loaded one (at load
  // ~30 the 20-job wait's unscaled 300 s ended a real-node run while the jobs were still completing).
  const boundMs = scaled(timeoutMs);
  const deadline = Date.now() + boundMs;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const result = await check();
      if (result === true) return;
      last = result;
    } catch (err) {
      if (err instanceof FatalWait)
        throw new Error(`While waiting for ${what}: ${err.message}`, { cause: err });
      last = (err as Error).message;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`Timed out after ${boundMs} ms waiting for ${what}: ${last}`);
}

export async function installProductOnNode(
  plane: ControlPlane,
  options: ProductOptions,
): Promise<ProductOnNode> {
  const node: RealNode | undefined = plane.node;
  if (!node) throw new Error('the control plane runs no real node (start it with { node: true })');
  const began = Date.now();
  const port = await freePort();
  const inNode = await node.exposeHostPort(port, 'simulator');
  const simulatorUrlInNode = `http://${inNode}`;
  const simulator = await startSimulator({ port, publicUrl: simulatorUrlInNode });
  try {
    return await install(plane, node, simulator, simulatorUrlInNode, options, began);
  } catch (err) {
    await simulator.stop();
    // The apiserver cannot reach the kubelet for `kubectl logs` (no route into the node), so the
    // containers' own log files say why, read inside the node.
    const logs = await node.containerLogs().catch((e: Error) => `(no container logs: ${e.message})`);
    throw new Error(`${(err as Error).message}\n--- container logs on the node ---\n${logs}`, { cause: err });
  }
}

async function install(
  plane: ControlPlane,
  node: RealNode,
  simulator: RunningSimulator,
  simulatorUrlInNode: string,
  options: ProductOptions,
  began: number,
): Promise<ProductOnNode> {
  const kc = plane.kubeConfig();
  const [aroRepository, aroTag] = splitImage(node.info.images.aro);

  await ensureNamespace(kc, CONTROLLER_NAMESPACE);
  await ensureNamespace(kc, RUNNER_NAMESPACE);
  const faults = faultSwitchInstall(options.faultSwitches ?? [], options.controllerValues ?? {});
  // Before the Deployment: a pod whose ConfigMap volume is missing would wait for it, not start without.
  await apply(kc, faults.manifests);
  const controllerManifests = await render(CHARTS.controller, {
    release: CONTROLLER_RELEASE,
    namespace: CONTROLLER_NAMESPACE,
    setJson: {
      image: { repository: aroRepository, tag: aroTag, pullPolicy: 'Never' },
      // Shorter terms than the chart's 15/10/2 s, so a killed leader is replaced within seconds.
      leaderElection: { leaseDurationSeconds: 8, renewDeadlineSeconds: 5, retryPeriodSeconds: 1 },
      ...options.controllerValues,
      ...faults.values,
    },
  });
  await apply(kc, controllerManifests);
  const deployment = controllerManifests.find((m) => m.kind === 'Deployment') as unknown as V1Deployment;
  const serviceAccountName = deployment.spec?.template.spec?.serviceAccountName ?? CONTROLLER_RELEASE;

  const runnerEnv = Object.entries(options.runnerEnv ?? {}).map(([name, value]) => ({ name, value }));
  const scaleSetManifests = await render(CHARTS.scaleSet, {
    release: SCALE_SET_RELEASE,
    namespace: RUNNER_NAMESPACE,
    setJson: {
      githubConfigUrl: `${simulatorUrlInNode}/octo/hello`,
      githubConfigSecret: { github_token: DEFAULT_PAT },
      minRunners: options.minRunners ?? 0,
      maxRunners: options.maxRunners ?? 20,
      controllerServiceAccount: { namespace: CONTROLLER_NAMESPACE, name: serviceAccountName },
      template: {
        spec: {
          containers: [runnerProgramContainer(node.info.images.runner, runnerEnv)],
        },
      },
    },
  });
  await apply(kc, scaleSetManifests);

  const timeoutMs = options.readyTimeoutMs ?? 180_000;
  const selector = `app.kubernetes.io/instance=${CONTROLLER_RELEASE}`;
  await waitUntil(
    'both controller replicas Ready (their readiness probes, run by the kubelet)',
    timeoutMs,
    async () => {
      const pods = await listPods(kc, CONTROLLER_NAMESPACE, selector);
      const ready = pods.filter(podReady).length;
      return ready >= 2 ? true : `${ready} of ${pods.length} controller pods Ready`;
    },
  );
  options.log(`controller replicas Ready after ${((Date.now() - began) / 1000).toFixed(1)} s`);
  let scaleSetId = 0;
  await waitUntil('the listener pod Ready and its session open', timeoutMs, async () => {
    const pods = (await listPods(kc, CONTROLLER_NAMESPACE)).filter((p) =>
      p.metadata?.name?.endsWith('-listener'),
    );
    const listener = pods.find((p) => p.status?.phase === 'Running');
    const sessions = simulator.sessions();
    if (listener && sessions.length > 0) {
      scaleSetId = sessions[0].scaleSetId;
      return true;
    }
    return `listener pods: ${pods.map((p) => `${p.metadata?.name}=${p.status?.phase}`).join(', ') || 'none'}; sessions: ${sessions.length}`;
  });
  const readySeconds = (Date.now() - began) / 1000;
  options.log(`listener Running with a session after ${readySeconds.toFixed(1)} s`);

  return {
    simulator,
    simulatorUrlInNode,
    kubeConfig: kc,
    controllerManifests,
    scaleSetManifests,
    scaleSetId,
    readySeconds,
    async stop() {
      await simulator.stop();
    },
  };
}

/** The preload of the test-only fault switches, as a file of this checkout. */
const FAULT_SWITCHES_FILE = join(__dirname, 'fault-switches.ts');
/** Where the controller's containers see it (a ConfigMap volume; read-only like the rest of the root). */
const FAULT_SWITCHES_DIR = '/aro-test-faults';
const FAULT_SWITCHES_CONFIGMAP = 'aro-test-fault-switches';

/**
 * The ConfigMap holding the preload and the chart values that mount it and load it (NODE_OPTIONS), added
 * to whatever env, volumes and mounts the test's own values already set. Nothing when no switch is named.
 */
function faultSwitchInstall(
  switches: readonly string[],
  values: Record<string, unknown>,
): { manifests: Manifest[]; values: Record<string, unknown> } {
  if (switches.length === 0) return { manifests: [], values: {} };
  const list = (key: string): unknown[] => (Array.isArray(values[key]) ? (values[key] as unknown[]) : []);
  const configMap = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: FAULT_SWITCHES_CONFIGMAP, namespace: CONTROLLER_NAMESPACE },
    data: { 'fault-switches.ts': readFileSync(FAULT_SWITCHES_FILE, 'utf8') },
  } as unknown as Manifest;
  return {
    manifests: [configMap],
    values: {
      env: [
        ...list('env'),
        { name: 'NODE_OPTIONS', value: `--require ${FAULT_SWITCHES_DIR}/fault-switches.ts` },
        { name: 'ARO_TEST_FAULTS', value: switches.join(',') },
      ],
      volumes: [
        ...list('volumes'),
        { name: 'test-fault-switches', configMap: { name: FAULT_SWITCHES_CONFIGMAP } },
      ],
      volumeMounts: [
        ...list('volumeMounts'),
        { name: 'test-fault-switches', mountPath: FAULT_SWITCHES_DIR, readOnly: true },
      ],
    },
  };
}

function splitImage(ref: string): [string, string] {
  const at = ref.lastIndexOf(':');
  return [ref.slice(0, at), ref.slice(at + 1)];
}

export { listPods };

/** The runner container of a scale set on the node: the simulator's runner program (runner-program.ts). */
export function runnerProgramContainer(
  image: string,
  env: Array<{ name: string; value: string }> = [],
): Record<string, unknown> {
  return {
    name: 'runner',
    image,
    imagePullPolicy: 'Never',
    command: ['node', '/runner/runner-program.ts'],
    ...(env.length ? { env } : {}),
  };
}
