import type { V1Pod } from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { ControlPlane } from '../../harness/control-plane';
import { CRD_PATHS } from '../../harness/global-setup';
import {
  captureHostState,
  settledHostChanges,
  leftoverProcesses,
  type HostState,
} from '../../harness/node/host-state';
import {
  CONTROLLER_NAMESPACE,
  installProductOnNode,
  waitUntil,
  type ProductOnNode,
} from '../../harness/node/product-on-node';
import { scaled } from '../../harness/time-scale';
import { describeOnRealNode } from './availability';
import {
  ActionsCallCounter,
  auditFlushed,
  controllerRequests,
  cutFromApiserver,
  isWrite,
  loggedAt,
  type ControllerRequest,
} from './partition';
import {
  controllerLease,
  controllerPods,
  enqueue,
  getJson,
  waitForJobs,
  waitForReadyControllers,
  waitUntilNothingLeft,
} from './product-state';

jest.setTimeout(scaled(600_000));
const INSTALL_TIMEOUT_MS = scaled(1_800_000);

/*
 * A leading controller replica cut off the apiserver while it works: its pod's packets to the apiserver
 * and the answers dropped in the node's network namespace (partition.ts), its process left running. What
 * must hold: it stops acting (no write reaches the apiserver, no Actions call leaves the pod) before any
 * other replica may take the Lease, another replica takes over and serves the jobs, and the cut replica
 * comes back as a follower once the network returns; every job runs once, on a runner of its own.
 *
 * The lease terms are at the edge of what the product accepts: renewDeadline one second under the lease,
 * renewals two seconds apart. A leader that counted its deadline from its next renewal attempt rather than
 * from its last renewal would lead for retryPeriod + renewDeadline = 9 s after it, past the 8 s after
 * which a standby may take the Lease.
 */

const READINESS = { initialDelaySeconds: 1, periodSeconds: 2, timeoutSeconds: 2, failureThreshold: 2 };
const LIVENESS = { initialDelaySeconds: 60, periodSeconds: 2, timeoutSeconds: 3, failureThreshold: 5 };
const LEASE = { leaseDurationSeconds: 8, renewDeadlineSeconds: 7, retryPeriodSeconds: 2 };
const LEASE_MS = LEASE.leaseDurationSeconds * 1_000;
/** A container of the product started on this machine under load (image present). */
const CONTAINER_START_MS = 60_000;
/** Shorter than any renewal deadline: the leader should ride it out. */
const SHORT_CUT_MS = 2_000;
/** Two and a half leases: the Lease changes hands while the cut replica still runs. */
const LONG_CUT_MS = 20_000;

describeOnRealNode('A partitioned controller leader on a real node', () => {
  let hostBefore: HostState;
  let plane: ControlPlane;
  let product: ProductOnNode;
  let nodeDir = '';
  let auditLogPath = '';
  let serviceAccount = '';
  /** Runner registrations removed through the Actions API, in order. */
  const removed: string[] = [];
  const log = (line: string): void => void process.stderr.write(`[partition] ${line}\n`);

  beforeAll(async () => {
    hostBefore = captureHostState();
    plane = await ControlPlane.start({
      crdPaths: CRD_PATHS,
      node: true,
      handleSignals: true,
      auditLog: true,
      log,
    });
    nodeDir = plane.node?.dir ?? '';
    auditLogPath = plane.info.auditLogPath ?? '';
    product = await installProductOnNode(plane, {
      maxRunners: 10,
      controllerValues: {
        readinessProbe: READINESS,
        livenessProbe: LIVENESS,
        flags: { shutdownTimeoutSeconds: 3 },
        leaderElection: LEASE,
      },
      log,
    });
    product.simulator.onRunnerRemoved = (runner) => {
      removed.push(runner.name);
      return Promise.resolve();
    };
    const deployment = product.controllerManifests.find((m) => m.kind === 'Deployment') as
      { spec?: { template?: { spec?: { serviceAccountName?: string } } } } | undefined;
    serviceAccount = `system:serviceaccount:${CONTROLLER_NAMESPACE}:${deployment?.spec?.template?.spec?.serviceAccountName ?? ''}`;
  }, INSTALL_TIMEOUT_MS);

  afterAll(async () => {
    await product?.stop();
    await plane?.stop();
  });

  async function leaderAndStandby(): Promise<{ leader: V1Pod; standby: V1Pod; holder: string }> {
    const ready = await waitForReadyControllers(product.kubeConfig, 3 * CONTAINER_START_MS);
    let found: { leader: V1Pod; standby: V1Pod; holder: string } | undefined;
    await waitUntil('a Ready replica holding the lease', 2 * LEASE_MS, async () => {
      const { holderIdentity } = await controllerLease(product);
      const leader = ready.find((p) => holderIdentity.startsWith(`${p.metadata?.name}_`));
      const standby = ready.find((p) => p !== leader);
      if (!leader || !standby) return `holder ${holderIdentity || '(none)'}`;
      found = { leader, standby, holder: holderIdentity };
      return true;
    });
    if (!found) throw new Error('unreachable');
    return found;
  }

  /** Every job ran once, each on a runner of its own, and every registration was removed once. */
  function expectEachJobOnce(ids: readonly string[]): void {
    const jobs = ids.map((id) => product.simulator.job(id));
    expect(jobs.map((j) => `${j?.jobId} ${j?.state} ${j?.result} started ${j?.startAttempts}x`)).toEqual(
      jobs.map((j) => `${j?.jobId} completed succeeded started 1x`),
    );
    const runners = jobs.map((j) => j?.runnerName);
    expect(new Set(runners).size).toBe(ids.length);
    const twice = removed.filter((name, i) => removed.indexOf(name) !== i);
    expect(twice).toEqual([]);
  }

  const describeRequest = (r: ControllerRequest): string =>
    `${new Date(r.receivedMs).toISOString()} ${r.pod} ${r.verb} ${r.resource} ${r.name} -> ${r.code}`;

  it('rides out a cut shorter than its renew deadline: it keeps the Lease, nothing is done twice', async () => {
    const { leader, holder } = await leaderAndStandby();
    const node = plane.node;
    if (!node) throw new Error('no node');
    const before = await controllerLease(product);
    const ids = enqueue(product, 4, 'sleep=3');
    await waitUntil('a job running', 3 * CONTAINER_START_MS, async () =>
      ids.some((id) => product.simulator.job(id)?.state === 'running') ? true : 'none running',
    );
    const cutAt = Date.now();
    const heal = await cutFromApiserver(node, leader.status?.podIP ?? '');
    log(`cut ${leader.metadata?.name} off the apiserver for ${SHORT_CUT_MS} ms`);
    await sleep(SHORT_CUT_MS);
    await heal();
    await waitForJobs(product, 'the jobs enqueued before the short cut', ids, 3 * CONTAINER_START_MS);
    await waitUntilNothingLeft(product);
    const after = await controllerLease(product);
    const lost = (
      await loggedAt(node, CONTROLLER_NAMESPACE, leader.metadata?.name ?? '', 'Lost leadership')
    ).filter((t) => t >= cutAt);
    expect({ holder: after.holderIdentity, transitions: after.leaseTransitions, lost }).toEqual({
      holder,
      transitions: before.leaseTransitions,
      lost: [],
    });
    expectEachJobOnce(ids);
  });

  it('stops a leader cut off longer than the lease before another may take over; it returns as a follower', async () => {
    const { leader, holder } = await leaderAndStandby();
    const node = plane.node;
    if (!node) throw new Error('no node');
    const leaderName = leader.metadata?.name ?? '';
    const podIp = leader.status?.podIP ?? '';
    const restartsBefore =
      leader.status?.containerStatuses?.find((c) => c.name === 'manager')?.restartCount ?? 0;
    const counter = new ActionsCallCounter(node, podIp, product.simulator.port);
    await counter.install();
    try {
      // The leader busy when the cut comes: runners being created, pods starting, jobs running.
      const running = enqueue(product, 6, 'sleep=6');
      await waitUntil('jobs running', 3 * CONTAINER_START_MS, async () => {
        const n = running.filter((id) => product.simulator.job(id)?.state === 'running').length;
        return n >= 2 ? true : `${n} running`;
      });
      const before = await controllerLease(product);
      let lastRenewedMs = before.renewTimeMs;
      const cutAt = Date.now();
      const heal = await cutFromApiserver(node, podIp);
      log(`cut ${leaderName} (${holder}) off the apiserver for ${LONG_CUT_MS} ms`);
      // Only a leader that is not cut off can create the runners of these.
      const during = enqueue(product, 4, 'sleep=1');
      try {
        let newHolder = '';
        let actionsAtTakeover = -1;
        let lastActionsGrowthMs = cutAt;
        let lastCount = await counter.read();
        await waitUntil('another process to hold the lease', LEASE_MS + 30_000, async () => {
          const now = await controllerLease(product);
          if (now.holderIdentity === holder) lastRenewedMs = now.renewTimeMs;
          const count = await counter.read();
          if (count > lastCount) lastActionsGrowthMs = Date.now();
          lastCount = count;
          if (now.holderIdentity === '' || now.holderIdentity === holder)
            return `holder ${now.holderIdentity}`;
          newHolder = now.holderIdentity;
          actionsAtTakeover = count;
          return true;
        });
        log(`${newHolder} took the lease ${((Date.now() - cutAt) / 1000).toFixed(1)} s after the cut`);
        while (Date.now() < cutAt + LONG_CUT_MS) {
          const count = await counter.read();
          if (count > lastCount) lastActionsGrowthMs = Date.now();
          lastCount = count;
          await sleep(250);
        }
        await heal();
        log(
          `healed the cut after ${((Date.now() - cutAt) / 1000).toFixed(1)} s (cut at ${new Date(cutAt).toISOString()})`,
        );

        await waitForJobs(
          product,
          'the jobs running at the cut and those enqueued during it',
          [...running, ...during],
          3 * CONTAINER_START_MS,
        );
        await waitUntilNothingLeft(product);
        // Back as a follower: its manager container (restarted once it gave up leading) Ready again,
        // the Lease still the new leader's.
        await waitUntil(`${leaderName} Ready again as a follower`, 3 * CONTAINER_START_MS, async () => {
          const pod = (await controllerPods(product.kubeConfig)).find((p) => p.metadata?.name === leaderName);
          const status = pod?.status?.containerStatuses?.find((c) => c.name === 'manager');
          return status?.ready ? true : `restarts ${status?.restartCount}, ready ${String(status?.ready)}`;
        });
        const lease = await controllerLease(product);
        expect(lease.holderIdentity).toBe(newHolder);
        const pod = await getJson<V1Pod>(
          product.kubeConfig,
          `/api/v1/namespaces/${CONTROLLER_NAMESPACE}/pods/${leaderName}`,
        );
        const manager = pod.status?.containerStatuses?.find((c) => c.name === 'manager');
        const finalCount = await counter.read();

        // When the cut leader gave up, against when another process could first have taken the Lease:
        // leaseDuration after the last renewal it wrote (a standby counts from when it saw that
        // renewal, which is no earlier).
        const lostAt = (await loggedAt(node, CONTROLLER_NAMESPACE, leaderName, 'Lost leadership')).find(
          (t) => t >= cutAt,
        );
        await auditFlushed(product.kubeConfig, auditLogPath);
        const requests = (await controllerRequests(auditLogPath, serviceAccount)).filter(
          (r) => r.resource !== 'leases',
        );
        const writes = requests.filter(isWrite);
        const lastOldWrite = writes
          .filter((r) => r.pod === leaderName && r.receivedMs < cutAt + LEASE_MS)
          .pop();
        const firstNewWrite = writes.find((r) => r.pod !== leaderName && r.receivedMs >= cutAt);
        const staleWrites = writes.filter((r) => r.pod === leaderName && r.receivedMs >= lease.acquireTimeMs);
        const rel = (ms: number | undefined): string =>
          ms === undefined ? 'never' : `${((ms - cutAt) / 1000).toFixed(2)} s`;
        log(
          `times from the cut: last renewal ${rel(lastRenewedMs)}, gave up ${rel(lostAt)}, may be taken ` +
            `${rel(lastRenewedMs + LEASE_MS)}, taken ${rel(lease.acquireTimeMs)}; last write of the cut ` +
            `leader ${rel(lastOldWrite?.receivedMs)}, first write of the new one ${rel(firstNewWrite?.receivedMs)}; ` +
            `last Actions call of the cut pod seen ${rel(lastActionsGrowthMs)}; its container restarts ` +
            `${restartsBefore} -> ${manager?.restartCount} (exit ${manager?.lastState?.terminated?.exitCode})`,
        );

        expect(lostAt).toBeDefined();
        // It stopped leading before anyone could take the Lease...
        expect((lostAt ?? Infinity) - lastRenewedMs).toBeLessThan(LEASE_MS);
        // ...which the new holder took no earlier than the lease allows.
        expect(lease.acquireTimeMs - lastRenewedMs).toBeGreaterThanOrEqual(LEASE_MS);
        // Nothing it sent reached the apiserver once the Lease had changed hands: not a write made
        // before the cut and delivered when the network came back, not one of the process after it.
        expect(staleWrites.map(describeRequest)).toEqual([]);
        // And no Actions call left the pod after the takeover, during the cut or after it.
        expect(finalCount - actionsAtTakeover).toBe(0);
        expectEachJobOnce([...running, ...during]);
      } finally {
        await heal();
      }
    } finally {
      await counter.remove().catch(() => undefined);
    }
  });

  it('leaves the host as it found it', async () => {
    const nodePids = [...plane.processes.map((p) => p.pid), ...(plane.node?.pids ?? [])];
    await product.stop();
    await plane.stop();
    expect(await settledHostChanges(hostBefore, [nodeDir])).toEqual([]);
    expect(leftoverProcesses(nodePids, nodeDir)).toEqual([]);
  });
});
