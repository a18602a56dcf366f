import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import type { RunningSimulator } from '../../../apps/simulator/src';
import { ControlPlane } from '../../harness/control-plane';
import { CRD_PATHS } from '../../harness/global-setup';
import {
  captureHostState,
  hostChanges,
  leftoverProcesses,
  type HostState,
} from '../../harness/node/host-state';
import {
  CONTROLLER_NAMESPACE,
  RUNNER_NAMESPACE,
  installProductOnNode,
  listPods,
  waitUntil,
  type ProductOnNode,
} from '../../harness/node/product-on-node';
import { kubeRequest } from '../../harness/rest';
import { describeOnRealNode } from './availability';

/*
 * The whole product on a real node (test/harness/node): the images built from the Dockerfile, the
 * controller's two replicas as pods whose probes the kubelet runs, the listener pod the controller
 * creates, runner pods of the runner image that take their job from the simulator and exit. The waits
 * below derive from what the product promises (lease terms, the chart's probe periods) plus the time a
 * loaded 2-core machine takes to start a container; each is a wait on an observed event.
 */

async function getJson<T>(kc: KubeConfig, path: string): Promise<T> {
  const res = await kubeRequest(kc, { path, timeoutMs: 10_000 });
  if (res.status !== 200)
    throw new Error(`GET ${path}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
  return res.body as T;
}

async function ephemeralRunners(kc: KubeConfig): Promise<{ metadata: { name: string } }[]> {
  const list = await getJson<{ items: { metadata: { name: string } }[] }>(
    kc,
    `/apis/actions.github.com/v1alpha1/namespaces/${RUNNER_NAMESPACE}/ephemeralrunners`,
  );
  return list.items;
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
async function leftovers(product: ProductOnNode): Promise<string[]> {
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

function enqueue(product: ProductOnNode, count: number, displayName: string): string[] {
  return Array.from(
    { length: count },
    () => product.simulator.enqueueJob({ scaleSetId: product.scaleSetId, displayName }).jobId,
  );
}

async function leaseHolder(kc: KubeConfig): Promise<string> {
  const leases = await getJson<{
    items: { metadata: { name: string }; spec?: { holderIdentity?: string } }[];
  }>(kc, `/apis/coordination.k8s.io/v1/namespaces/${CONTROLLER_NAMESPACE}/leases`);
  return leases.items.map((l) => l.spec?.holderIdentity ?? '').find(Boolean) ?? '';
}

async function controllerPods(kc: KubeConfig): Promise<V1Pod[]> {
  return listPods(kc, CONTROLLER_NAMESPACE, 'app.kubernetes.io/instance=aro-controller');
}

describeOnRealNode(
  'The product on a real node (kubelet + containerd, images built from the Dockerfile)',
  () => {
    let hostBefore: HostState;
    let plane: ControlPlane;
    let product: ProductOnNode;
    let nodePids: number[] = [];
    let nodeDir = '';
    const log = (line: string): void => void process.stderr.write(`[real-node] ${line}\n`);

    beforeAll(async () => {
      hostBefore = captureHostState();
      // The first run on a machine installs packages and builds the kubelet and the images (minutes);
      // .ci/run does that before the tests, so here it finds them cached.
      plane = await ControlPlane.start({ crdPaths: CRD_PATHS, node: true, handleSignals: true, log });
      nodeDir = plane.node?.dir ?? '';
      product = await installProductOnNode(plane, {
        maxRunners: 20,
        // The test-only fault switch (apps/controller/src/test-faults.ts) the stuck-loop scenario throws.
        controllerValues: { env: [{ name: 'ARO_TEST_FAULTS', value: 'hang-on-sigusr2' }] },
        log,
      });
    }, 1_800_000);

    afterAll(async () => {
      await product?.stop();
      await plane?.stop();
    }, 120_000);

    it('runs 20 jobs, each on its own runner pod, all succeed, and leaves nothing behind', async () => {
      const ids = enqueue(product, 20, 'sleep=3');
      await waitUntil('20 jobs completed', 300_000, async () => {
        const { done, failed } = jobsDone(product.simulator, ids);
        if (failed.length) throw new Error(`jobs failed: ${failed.join(', ')}`);
        return done === 20 ? true : `${done} of 20 done`;
      });
      const runners = ids.map((id) => product.simulator.job(id)?.runnerName);
      expect(new Set(runners).size).toBe(20);
      expect(runners.every((name) => name?.startsWith('real-node-'))).toBe(true);
      await waitUntil('no pod, EphemeralRunner, secret or registration left', 120_000, async () => {
        const left = await leftovers(product);
        return left.length === 0 ? true : left.join('; ');
      });
    }, 600_000);

    it('goes on when the leading controller pod is force-deleted mid-run: the other replica takes over', async () => {
      const kc = product.kubeConfig;
      const ids = enqueue(product, 6, 'sleep=8');
      await waitUntil('jobs running', 180_000, async () => {
        const running = ids.filter((id) => product.simulator.job(id)?.state === 'running').length;
        return running >= 3 ? true : `${running} running`;
      });
      const holder = await leaseHolder(kc);
      const pods = await controllerPods(kc);
      const leader = pods.find((p) => holder.startsWith(p.metadata?.name ?? '\0'));
      const other = pods.find((p) => p !== leader && p.metadata?.deletionTimestamp === undefined);
      if (!leader?.metadata?.name || !other?.metadata?.name) {
        throw new Error(`no leader among ${pods.map((p) => p.metadata?.name).join(', ')} (holder ${holder})`);
      }
      const res = await kubeRequest(kc, {
        method: 'DELETE',
        path: `/api/v1/namespaces/${CONTROLLER_NAMESPACE}/pods/${leader.metadata.name}`,
        body: { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0 },
        timeoutMs: 10_000,
      });
      expect(res.status).toBe(200);
      log(`force-deleted the leader ${leader.metadata.name}; ${other.metadata.name} should take over`);
      // The lease lasts 8 s past the dead leader's last renewal; the standby retries every second.
      const otherName = other.metadata.name;
      await waitUntil(`${otherName} to hold the lease`, 60_000, async () => {
        const now = await leaseHolder(kc);
        return now.startsWith(otherName) ? true : `holder ${now}`;
      });
      await waitUntil('the jobs of the run completed', 300_000, async () => {
        const { done, failed } = jobsDone(product.simulator, ids);
        if (failed.length) throw new Error(`jobs failed: ${failed.join(', ')}`);
        return done === ids.length ? true : `${done} of ${ids.length} done`;
      });
      await waitUntil('nothing left', 120_000, async () => {
        const left = await leftovers(product);
        return left.length === 0 ? true : left.join('; ');
      });
    }, 600_000);

    it('judges a runner container killed mid-job as the seed says: the runner with the job is deleted, its registration removed, no new pod for it', async () => {
      const kc = product.kubeConfig;
      const [id] = enqueue(product, 1, 'sleep=120');
      let runnerName = '';
      await waitUntil('the job running on a runner pod', 180_000, async () => {
        const job = product.simulator.job(id);
        runnerName = job?.runnerName ?? '';
        return job?.state === 'running' && runnerName ? true : `job ${job?.state}`;
      });
      const pod = await getJson<V1Pod>(kc, `/api/v1/namespaces/${RUNNER_NAMESPACE}/pods/${runnerName}`);
      const containerId = pod.status?.containerStatuses
        ?.find((c) => c.name === 'runner')
        ?.containerID?.replace(/^containerd:\/\//, '');
      if (!containerId || !plane.node) throw new Error(`no runner container in ${runnerName}`);
      // SIGKILL from outside, as the OOM killer or a node problem would: the runner reports nothing.
      await plane.node.exec(plane.node.ctr('tasks', 'kill', '--signal', 'SIGKILL', containerId));
      log(`killed the runner container of ${runnerName} (${containerId.slice(0, 12)}) mid-job`);
      await waitUntil(`pod ${runnerName} Failed with exit code 137`, 60_000, async () => {
        const p = await getJson<V1Pod>(kc, `/api/v1/namespaces/${RUNNER_NAMESPACE}/pods/${runnerName}`).catch(
          () => undefined,
        );
        const code = p?.status?.containerStatuses?.find((c) => c.name === 'runner')?.state?.terminated
          ?.exitCode;
        return code === 137 || !p ? true : `phase ${p.status?.phase}`;
      });
      // The seed: a failed pod whose runner has a job is not restarted: the EphemeralRunner is deleted
      // and its finalizer queues the registration's removal.
      await waitUntil(`EphemeralRunner ${runnerName} and its pod gone, not replaced`, 120_000, async () => {
        const runners = (await ephemeralRunners(kc)).map((r) => r.metadata.name);
        const pods = (await listPods(kc, RUNNER_NAMESPACE)).map((p) => p.metadata?.name);
        return !runners.includes(runnerName) && !pods.includes(runnerName)
          ? true
          : `EphemeralRunner there: ${runners.includes(runnerName)}, pod there: ${pods.includes(runnerName)}`;
      });
      // The service still holds the job on the dead runner, so the registration cannot go yet (GitHub
      // refuses to remove a busy runner). It gives the job up once the runner stops answering, which the
      // simulator is told here, and then the queued removal must go through: no registration leaks.
      expect(product.simulator.job(id)?.state).toBe('running');
      product.simulator.runnerExited(runnerName, 137);
      await waitUntil(`the registration of ${runnerName} removed`, 120_000, async () =>
        product.simulator.runner(runnerName) === undefined
          ? true
          : `registered: ${JSON.stringify(product.simulator.runner(runnerName))}`,
      );
      expect(product.simulator.job(id)?.result).toBe('failed');
      await waitUntil('nothing left', 180_000, async () => {
        const left = await leftovers(product);
        return left.length === 0 ? true : left.join('; ');
      });
    }, 600_000);

    it('shows why a runner image cannot be pulled, and runs the job once the template is fixed', async () => {
      const kc = product.kubeConfig;
      const ars = `/apis/actions.github.com/v1alpha1/namespaces/${RUNNER_NAMESPACE}/autoscalingrunnersets/real-node`;
      const setImage = async (image: string): Promise<void> => {
        const res = await kubeRequest(kc, {
          method: 'PATCH',
          path: ars,
          contentType: 'application/json-patch+json',
          body: [{ op: 'replace', path: '/spec/template/spec/containers/0/image', value: image }],
          timeoutMs: 10_000,
        });
        if (res.status !== 200)
          throw new Error(`patching the runner image: ${res.status} ${JSON.stringify(res.body)}`);
      };
      const good = plane.node?.info.images.runner ?? '';
      const missing = 'localhost/aro-runner:not-built';
      await setImage(missing);
      const [id] = enqueue(product, 1, 'sleep=1');
      let reason = '';
      let podName = '';
      await waitUntil('a runner pod waiting on its image', 180_000, async () => {
        const pods = await listPods(kc, RUNNER_NAMESPACE);
        const stuck = pods.find((p) => p.spec?.containers[0]?.image === missing);
        const waiting = stuck?.status?.containerStatuses?.[0]?.state?.waiting;
        podName = stuck?.metadata?.name ?? '';
        reason = waiting?.reason ?? '';
        return reason === 'ErrImageNeverPull'
          ? true
          : `pod ${podName || 'none'}: ${reason || 'no waiting reason yet'}`;
      });
      const events = await getJson<{
        items: { reason?: string; message?: string; involvedObject?: { name?: string } }[];
      }>(kc, `/api/v1/namespaces/${RUNNER_NAMESPACE}/events`);
      const pullEvent = events.items.find(
        (e) => e.involvedObject?.name === podName && e.reason === 'ErrImageNeverPull',
      );
      log(`runner pod ${podName}: ${reason}; event: ${pullEvent?.message ?? '(none)'}`);
      expect(pullEvent?.message).toContain(missing);
      expect(product.simulator.job(id)?.state).not.toBe('completed');
      await setImage(good);
      await waitUntil('the job run by a runner of the fixed template', 300_000, async () => {
        const job = product.simulator.job(id);
        return job?.state === 'completed' && job.result === 'succeeded' ? true : `job ${job?.state}`;
      });
      await waitUntil('nothing left', 180_000, async () => {
        const left = await leftovers(product);
        return left.length === 0 ? true : left.join('; ');
      });
    }, 600_000);

    it('restarts a controller whose loop is stuck (liveness probe), out of its Service meanwhile (readiness)', async () => {
      const kc = product.kubeConfig;
      const holder = await leaseHolder(kc);
      const pods = await controllerPods(kc);
      const stuck = pods.find((p) => holder.startsWith(p.metadata?.name ?? '\0')) ?? pods[0];
      const name = stuck.metadata?.name ?? '';
      const manager = stuck.status?.containerStatuses?.find((c) => c.name === 'manager');
      const containerId = manager?.containerID?.replace(/^containerd:\/\//, '');
      if (!containerId || !plane.node) throw new Error(`no manager container in ${name}`);
      const restartsBefore = manager?.restartCount ?? 0;
      await plane.node.exec(plane.node.ctr('tasks', 'kill', '--signal', 'SIGUSR2', containerId));
      log(`hung the event loop of ${name} (the leader: ${holder.startsWith(name)})`);
      const endpointReady = async (): Promise<boolean | undefined> => {
        const slices = await getJson<{
          items: { endpoints?: { targetRef?: { name?: string }; conditions?: { ready?: boolean } }[] }[];
        }>(kc, `/apis/discovery.k8s.io/v1/namespaces/${CONTROLLER_NAMESPACE}/endpointslices`);
        const endpoint = slices.items
          .flatMap((s) => s.endpoints ?? [])
          .find((e) => e.targetRef?.name === name);
        return endpoint?.conditions?.ready;
      };
      // The chart's readiness probe: every 10 s, 3 failures (each a 5 s timeout) before Unready.
      await waitUntil(`${name} out of the Service (its endpoint not ready)`, 120_000, async () =>
        (await endpointReady()) === false ? true : `endpoint ready: ${String(await endpointReady())}`,
      );
      // The chart's liveness probe: every 20 s, 3 failures, then the kill (after the grace period).
      await waitUntil(`${name} restarted by the kubelet and Ready again`, 300_000, async () => {
        const pod = await getJson<V1Pod>(kc, `/api/v1/namespaces/${CONTROLLER_NAMESPACE}/pods/${name}`);
        const status = pod.status?.containerStatuses?.find((c) => c.name === 'manager');
        const restarted = (status?.restartCount ?? 0) > restartsBefore;
        return restarted && status?.ready && (await endpointReady()) === true
          ? true
          : `restarts ${status?.restartCount}, ready ${String(status?.ready)}`;
      });
      const events = await getJson<{
        items: { reason?: string; message?: string; involvedObject?: { name?: string } }[];
      }>(kc, `/api/v1/namespaces/${CONTROLLER_NAMESPACE}/events`);
      const probeEvents = events.items.filter(
        (e) => e.involvedObject?.name === name && e.reason === 'Unhealthy',
      );
      // The restart was the liveness probe's doing (the readiness probe's was seen on the EndpointSlice).
      log(`probe events of ${name}: ${probeEvents.map((e) => e.message).join(' | ')}`);
      expect(probeEvents.some((e) => e.message?.startsWith('Liveness probe failed'))).toBe(true);
    }, 600_000);

    it('leaves the host as it found it: sysctls, iptables, links, mounts, cgroups, processes', async () => {
      nodePids = [...plane.processes.map((p) => p.pid), ...(plane.node?.pids ?? [])];
      await product.stop();
      await plane.stop();
      expect(hostChanges(hostBefore, captureHostState([nodeDir]))).toEqual([]);
      expect(leftoverProcesses(nodePids, nodeDir)).toEqual([]);
    }, 120_000);
  },
);
