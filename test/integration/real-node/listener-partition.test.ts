import type { V1Pod } from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { ControlPlane } from '../../harness/control-plane';
import { CRD_PATHS } from '../../harness/global-setup';
import { NODE_NETWORK } from '../../harness/node/node-files';
import type { RealNode } from '../../harness/node/real-node';
import {
  CONTROLLER_NAMESPACE,
  RUNNER_NAMESPACE,
  installProductOnNode,
  listPods,
  podReady,
  waitUntil,
  type ProductOnNode,
} from '../../harness/node/product-on-node';
import { scaled } from '../../harness/time-scale';
import { describeOnRealNode } from './availability';
import { cutFromApiserver } from './partition';
import { enqueue, getJson, waitForJobs, waitUntilNothingLeft } from './product-state';

jest.setTimeout(scaled(900_000));
const INSTALL_TIMEOUT_MS = scaled(1_800_000);

/*
 * The listener pod cut off, its process left running: (a) from the Actions service (the simulator, on
 * the host, reached through the node's relay), longer than its long poll's own deadline (90 s), while the
 * service forgets its session as the real one does to a listener that stopped polling; (b) from the
 * apiserver, for several of its retry intervals. Jobs are queued before and during each cut. What must
 * hold: the session comes back (a new one after (a), never two at once), the jobs queued during the cut
 * are served after it, each once; the EphemeralRunnerSet is never asked for more runners than the jobs
 * not yet finished (plus minRunners) nor more than maxRunners; and the listener pod is Ready again (or
 * replaced by the controller).
 */

const MAX_RUNNERS = 6;
const MIN_RUNNERS = 0;
const CONTAINER_START_MS = 60_000;
/** Past the listener's 90 s long-poll deadline and the service's 50 s hold. */
const ACTIONS_CUT_MS = 100_000;
/** Several of the listener's retry intervals towards the apiserver. */
const APISERVER_CUT_MS = 45_000;
/** A finished job may still count until the listener has heard of it (its next message). */
const COMPLETION_LAG_MS = scaled(20_000);

/** Both directions between the pod and the simulator's relay in the node, dropped silently. */
function actionsCutRules(podIp: string, port: number): string[][] {
  const node = `${NODE_NETWORK.nodeIp}/32`;
  const pod = `${podIp}/32`;
  return [
    ['INPUT', '-s', pod, '-d', node, '-p', 'tcp', '--dport', String(port), '-j', 'DROP'],
    ['OUTPUT', '-s', node, '-d', pod, '-p', 'tcp', '--sport', String(port), '-j', 'DROP'],
  ];
}

async function cutFromActions(node: RealNode, podIp: string, port: number): Promise<() => Promise<void>> {
  for (const rule of actionsCutRules(podIp, port)) await node.exec(['iptables', '-I', ...rule]);
  let healed = false;
  return async () => {
    if (healed) return;
    healed = true;
    for (const rule of actionsCutRules(podIp, port)) await node.exec(['iptables', '-D', ...rule]);
  };
}

const whenSet = (iso: string | undefined): number => {
  const ms = iso ? Date.parse(iso) : NaN;
  return Number.isFinite(ms) && ms > 0 ? ms : 0;
};

describeOnRealNode('A partitioned listener on a real node', () => {
  let plane: ControlPlane;
  let product: ProductOnNode;
  /** What the sampler saw that must never be: two sessions, replicas above what the jobs need. */
  const violations: string[] = [];
  let maxReplicasSeen = 0;
  let sampling = false;
  let sampler: Promise<void> = Promise.resolve();
  const log = (line: string): void => void process.stderr.write(`[listener-cut] ${line}\n`);

  beforeAll(async () => {
    plane = await ControlPlane.start({ crdPaths: CRD_PATHS, node: true, handleSignals: true, log });
    product = await installProductOnNode(plane, { maxRunners: MAX_RUNNERS, minRunners: MIN_RUNNERS, log });
    sampling = true;
    sampler = sample();
  }, INSTALL_TIMEOUT_MS);

  afterAll(async () => {
    sampling = false;
    await sampler;
    await product?.stop();
    await plane?.stop();
  });

  /** Every 250 ms: the sessions the service holds, and the replicas asked of the EphemeralRunnerSet. */
  async function sample(): Promise<void> {
    while (sampling) {
      const sessions = product.simulator.sessions().filter((s) => s.scaleSetId === product.scaleSetId);
      if (sessions.length > 1)
        violations.push(`${new Date().toISOString()} ${sessions.length} sessions at once`);
      try {
        const sets = await getJson<{ items: { metadata: { name: string }; spec?: { replicas?: number } }[] }>(
          product.kubeConfig,
          `/apis/actions.github.com/v1alpha1/namespaces/${RUNNER_NAMESPACE}/ephemeralrunnersets`,
        );
        const now = Date.now();
        const needed =
          MIN_RUNNERS +
          product.simulator
            .jobs({ scaleSetId: product.scaleSetId })
            .filter((j) => j.state !== 'completed' || now - whenSet(j.finishTime) < COMPLETION_LAG_MS).length;
        for (const set of sets.items) {
          const replicas = set.spec?.replicas ?? 0;
          maxReplicasSeen = Math.max(maxReplicasSeen, replicas);
          if (replicas > Math.min(MAX_RUNNERS, needed))
            violations.push(
              `${new Date(now).toISOString()} ${set.metadata.name} replicas ${replicas}, jobs need ${needed}, max ${MAX_RUNNERS}`,
            );
        }
      } catch {
        // A sample missed (the apiserver busy); the next one reads again.
      }
      await sleep(250);
    }
  }

  async function listenerPod(): Promise<V1Pod> {
    let found: V1Pod | undefined;
    await waitUntil('a Ready listener pod', 3 * CONTAINER_START_MS, async () => {
      const pods = (await listPods(product.kubeConfig, CONTROLLER_NAMESPACE)).filter(
        (p) => p.metadata?.name?.endsWith('-listener') && p.metadata.deletionTimestamp === undefined,
      );
      found = pods.find(podReady);
      return found
        ? true
        : `listener pods: ${pods.map((p) => `${p.metadata?.name}=${p.status?.phase}`).join(', ')}`;
    });
    if (!found) throw new Error('unreachable');
    return found;
  }

  function expectEachJobOnce(ids: readonly string[]): void {
    const jobs = ids.map((id) => product.simulator.job(id));
    expect(jobs.map((j) => `${j?.jobId} ${j?.state} ${j?.result} started ${j?.startAttempts}x`)).toEqual(
      jobs.map((j) => `${j?.jobId} completed succeeded started 1x`),
    );
    expect(new Set(jobs.map((j) => j?.runnerName)).size).toBe(ids.length);
  }

  /** The first time a job of `ids` went to a runner after `healedAt`, in ms after it. */
  function firstServedAfter(ids: readonly string[], healedAt: number): number {
    const times = ids.map((id) => whenSet(product.simulator.job(id)?.runnerAssignTime)).filter((t) => t > 0);
    return Math.min(...times) - healedAt;
  }

  async function expectListenerBack(before: V1Pod): Promise<string> {
    const after = await listenerPod();
    const status = after.status?.containerStatuses?.[0];
    return after.metadata?.uid === before.metadata?.uid
      ? `same pod Ready, restarts ${status?.restartCount ?? 0}`
      : `replaced by ${after.metadata?.name}`;
  }

  it('recovers its session after a cut from the Actions service longer than its long poll', async () => {
    const node = plane.node;
    if (!node) throw new Error('no node');
    const pod = await listenerPod();
    const [first] = product.simulator.sessions();
    const before = enqueue(product, 3, 'sleep=2');
    await waitUntil('a job of the first batch acquired', 3 * CONTAINER_START_MS, async () =>
      before.some((id) => whenSet(product.simulator.job(id)?.scaleSetAssignTime) > 0) ? true : 'none yet',
    );
    const cutAt = Date.now();
    const heal = await cutFromActions(node, pod.status?.podIP ?? '', product.simulator.port);
    log(`cut ${pod.metadata?.name} off the Actions service for ${ACTIONS_CUT_MS} ms`);
    const during: string[] = [];
    try {
      await sleep(5_000);
      during.push(...enqueue(product, 3, 'sleep=2'));
      // The service forgets the session of a listener that stopped polling.
      await sleep(55_000);
      product.simulator.expireSession(first.sessionId);
      await sleep(ACTIONS_CUT_MS - (Date.now() - cutAt));
    } finally {
      await heal();
    }
    const healedAt = Date.now();
    let sessionBackMs = 0;
    await waitUntil('a new session', 3 * CONTAINER_START_MS, async () => {
      const now = product.simulator.sessions();
      if (now.length !== 1 || now[0].sessionId === first.sessionId) return `${now.length} sessions`;
      sessionBackMs = Date.now() - cutAt;
      return true;
    });
    await waitForJobs(
      product,
      'the jobs queued before and during the cut',
      [...before, ...during],
      3 * CONTAINER_START_MS,
    );
    const served = firstServedAfter(during, healedAt);
    await waitUntilNothingLeft(product);
    const listener = await expectListenerBack(pod);
    log(
      `Actions cut: cut -> new session ${(sessionBackMs / 1000).toFixed(1)} s (heal at ` +
        `${((healedAt - cutAt) / 1000).toFixed(1)} s); heal -> first job served ${(served / 1000).toFixed(1)} s; ` +
        `listener ${listener}; max replicas ${maxReplicasSeen}`,
    );
    expectEachJobOnce([...before, ...during]);
    expect(violations).toEqual([]);
  });

  it('serves the jobs queued while it was cut from the apiserver, on current numbers', async () => {
    const node = plane.node;
    if (!node) throw new Error('no node');
    const pod = await listenerPod();
    const [session] = product.simulator.sessions();
    const before = enqueue(product, 3, 'sleep=2');
    await waitUntil('a job of the first batch acquired', 3 * CONTAINER_START_MS, async () =>
      before.some((id) => whenSet(product.simulator.job(id)?.scaleSetAssignTime) > 0) ? true : 'none yet',
    );
    const cutAt = Date.now();
    const heal = await cutFromApiserver(node, pod.status?.podIP ?? '');
    log(`cut ${pod.metadata?.name} off the apiserver for ${APISERVER_CUT_MS} ms`);
    const during: string[] = [];
    try {
      await sleep(5_000);
      during.push(...enqueue(product, 3, 'sleep=2'));
      await sleep(APISERVER_CUT_MS - (Date.now() - cutAt));
    } finally {
      await heal();
    }
    const healedAt = Date.now();
    await waitForJobs(
      product,
      'the jobs queued before and during the cut',
      [...before, ...during],
      3 * CONTAINER_START_MS,
    );
    const served = firstServedAfter(during, healedAt);
    await waitUntilNothingLeft(product);
    const listener = await expectListenerBack(pod);
    const sessions = product.simulator.sessions();
    log(
      `apiserver cut: session ${sessions[0]?.sessionId === session.sessionId ? 'kept' : 're-created'}; ` +
        `heal -> first job served ${(served / 1000).toFixed(1)} s; listener ${listener}; max replicas ${maxReplicasSeen}`,
    );
    expect(sessions).toHaveLength(1);
    expectEachJobOnce([...before, ...during]);
    expect(maxReplicasSeen).toBeLessThanOrEqual(MAX_RUNNERS);
    expect(violations).toEqual([]);
  });
});
