import type { KubeConfig, V1Deployment, V1Pod } from '@kubernetes/client-node';
import type { RunningSimulator } from '../../../apps/simulator/src';
import {
  FatalWait,
  CONTROLLER_NAMESPACE,
  CONTROLLER_RELEASE,
  RUNNER_NAMESPACE,
  listPods,
  podReady,
  waitUntil,
  type ProductOnNode,
} from '../../harness/node/product-on-node';
import { kubeRequest } from '../../harness/rest';

/** What the real-node scenarios read of the product: objects in the apiserver, jobs in the simulator. */

export async function getJson<T>(kc: KubeConfig, path: string): Promise<T> {
  const res = await kubeRequest(kc, { path, timeoutMs: 10_000 });
  if (res.status !== 200)
    throw new Error(`GET ${path}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
  return res.body as T;
}

export interface EphemeralRunnerView {
  metadata: { name: string };
  spec?: { spec?: { containers?: { image?: string }[] } };
  status?: { phase?: string; reason?: string; message?: string; failures?: Record<string, string> };
}

export async function ephemeralRunners(kc: KubeConfig): Promise<EphemeralRunnerView[]> {
  const list = await getJson<{ items: EphemeralRunnerView[] }>(
    kc,
    `/apis/actions.github.com/v1alpha1/namespaces/${RUNNER_NAMESPACE}/ephemeralrunners`,
  );
  return list.items;
}

export interface EventView {
  type?: string;
  reason?: string;
  message?: string;
  involvedObject?: { kind?: string; name?: string };
}

export async function events(kc: KubeConfig, namespace: string): Promise<EventView[]> {
  return (await getJson<{ items: EventView[] }>(kc, `/api/v1/namespaces/${namespace}/events`)).items;
}

async function runnerSecrets(kc: KubeConfig): Promise<string[]> {
  const list = await getJson<{
    items: { metadata: { name: string; ownerReferences?: { kind: string }[] } }[];
  }>(kc, `/api/v1/namespaces/${RUNNER_NAMESPACE}/secrets`);
  return list.items
    .filter((s) => s.metadata.ownerReferences?.some((o) => o.kind === 'EphemeralRunner'))
    .map((s) => s.metadata.name);
}

/** Pods, EphemeralRunners, their secrets and registrations still there; empty when all is cleaned up. */
export async function leftovers(product: ProductOnNode): Promise<string[]> {
  const kc = product.kubeConfig;
  const pods = (await listPods(kc, RUNNER_NAMESPACE)).map(
    (p) => `pod ${p.metadata?.name} (${p.status?.phase})`,
  );
  const runners = (await ephemeralRunners(kc)).map((r) => `EphemeralRunner ${r.metadata.name}`);
  const secrets = (await runnerSecrets(kc)).map((s) => `secret ${s}`);
  const registrations = product.simulator
    .registrations({ scaleSetId: product.scaleSetId })
    .map((r) => `registration ${r.name} (${r.status})`);
  return [...pods, ...runners, ...secrets, ...registrations];
}

export async function waitUntilNothingLeft(product: ProductOnNode, timeoutMs = 120_000): Promise<void> {
  await waitUntil('no pod, EphemeralRunner, secret or registration left', timeoutMs, async () => {
    const left = await leftovers(product);
    return left.length === 0 ? true : left.join('; ');
  });
}

export function enqueue(product: ProductOnNode, count: number, displayName: string): string[] {
  return Array.from(
    { length: count },
    () => product.simulator.enqueueJob({ scaleSetId: product.scaleSetId, displayName }).jobId,
  );
}

function jobsDone(sim: RunningSimulator, ids: readonly string[]): { done: number; failed: string[] } {
  let done = 0;
  const failed: string[] = [];
  for (const id of ids) {
    const job = sim.job(id);
    if (job?.state !== 'completed') continue;
    done++;
    if (job.result !== 'succeeded') failed.push(`${id}: ${job.result}`);
  }
  return { done, failed };
}

/**
 * Waits until every job of `ids` completed and succeeded. Fails at once, with the runners' own reasons,
 * when a job fails or a runner is Failed (the controller gave up on it: its pod failed MAX_POD_FAILURES
 * times, or never started): a broken runner pod spec shows then, not at the timeout. A pod that failed
 * and is being retried is the product at work, shown in the progress line.
 */
export async function waitForJobs(
  product: ProductOnNode,
  what: string,
  ids: readonly string[],
  timeoutMs: number,
): Promise<void> {
  await waitUntil(what, timeoutMs, async () => {
    const { done, failed } = jobsDone(product.simulator, ids);
    if (failed.length) throw new FatalWait(`jobs failed: ${failed.join(', ')}`);
    const runners = await ephemeralRunners(product.kubeConfig);
    const describe = (r: EphemeralRunnerView): string =>
      `${r.metadata.name} ${r.status?.phase ?? ''} ${r.status?.reason ?? ''} ${r.status?.message ?? ''} (pod failures: ${Object.keys(r.status?.failures ?? {}).length})`;
    const failedRunners = runners.filter((r) => r.status?.phase === 'Failed');
    if (failedRunners.length) {
      throw new FatalWait(`runners Failed: ${failedRunners.map(describe).join('; ')}`);
    }
    const retried = runners.filter((r) => Object.keys(r.status?.failures ?? {}).length > 0);
    return done === ids.length
      ? true
      : `${done} of ${ids.length} done${retried.length ? `; retried: ${retried.map(describe).join('; ')}` : ''}`;
  });
}

export async function controllerPods(kc: KubeConfig): Promise<V1Pod[]> {
  return listPods(kc, CONTROLLER_NAMESPACE, `app.kubernetes.io/instance=${CONTROLLER_RELEASE}`);
}

export async function waitForReadyControllers(kc: KubeConfig, timeoutMs: number): Promise<V1Pod[]> {
  let ready: V1Pod[] = [];
  await waitUntil('both controller replicas Ready', timeoutMs, async () => {
    const pods = (await controllerPods(kc)).filter((p) => p.metadata?.deletionTimestamp === undefined);
    ready = pods.filter(podReady);
    return ready.length >= 2 ? true : `${ready.length} of ${pods.length} Ready`;
  });
  return ready;
}

export interface LeaseView {
  holderIdentity: string;
  leaseTransitions: number;
  /** spec.acquireTime and spec.renewTime in ms since the epoch (0 when unset), as the holders wrote them. */
  acquireTimeMs: number;
  renewTimeMs: number;
}

/** The controller's leader-election Lease, named by the LEADER_ELECTION_ID the chart rendered. */
export async function controllerLease(product: ProductOnNode): Promise<LeaseView> {
  const deployment = product.controllerManifests.find((m) => m.kind === 'Deployment') as unknown as
    V1Deployment | undefined;
  const name = deployment?.spec?.template.spec?.containers
    .flatMap((c) => c.env ?? [])
    .find((e) => e.name === 'LEADER_ELECTION_ID')?.value;
  if (!name) throw new Error('the rendered controller Deployment sets no LEADER_ELECTION_ID');
  const lease = await getJson<{
    spec?: { holderIdentity?: string; leaseTransitions?: number; acquireTime?: string; renewTime?: string };
  }>(product.kubeConfig, `/apis/coordination.k8s.io/v1/namespaces/${CONTROLLER_NAMESPACE}/leases/${name}`);
  return {
    holderIdentity: lease.spec?.holderIdentity ?? '',
    leaseTransitions: lease.spec?.leaseTransitions ?? 0,
    acquireTimeMs: lease.spec?.acquireTime ? Date.parse(lease.spec.acquireTime) : 0,
    renewTimeMs: lease.spec?.renewTime ? Date.parse(lease.spec.renewTime) : 0,
  };
}

/** The container id (as `ctr` names it) of `container` in `pod`. */
export function containerId(pod: V1Pod, container: string): string | undefined {
  return pod.status?.containerStatuses
    ?.find((c) => c.name === container)
    ?.containerID?.replace(/^containerd:\/\//, '');
}
