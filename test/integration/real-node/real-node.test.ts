import type { V1Pod } from '@kubernetes/client-node';
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
  RUNNER_NAMESPACE,
  installProductOnNode,
  listPods,
  waitUntil,
  type ProductOnNode,
} from '../../harness/node/product-on-node';
import { kubeRequest } from '../../harness/rest';
import { describeOnRealNode } from './availability';
import {
  containerId,
  controllerLease,
  enqueue,
  ephemeralRunners,
  events,
  getJson,
  waitForJobs,
  waitForReadyControllers,
  waitUntilNothingLeft,
} from './product-state';
import { scaled } from '../../harness/time-scale';

/** Jest's bound on one scenario, at the run's time scale (the scenarios wait on the node's containers). */
jest.setTimeout(scaled(600_000));
/** ...and on the install: images imported, node started, chart applied. */
const INSTALL_TIMEOUT_MS = scaled(1_800_000);

/*
 * The whole product on a real node (test/harness/node): the images built from the Dockerfile, the
 * controller's two replicas as pods whose probes the kubelet runs, the listener pod the controller
 * creates, runner pods of the runner image that take their job from the simulator and exit.
 *
 * One install serves every scenario (it is most of the suite's time), and the stuck-loop scenario runs
 * on the standby replica while the 20 jobs run on the leader: neither touches what the other judges.
 * Every wait derives from a term set here or by the chart (probe periods and thresholds, lease terms,
 * the grace period) plus what a loaded 2-core machine takes to start a container, and ends on an event.
 */

/** The test install's probes: short periods, so a hung replica is out in seconds, not minutes. */
const READINESS = { initialDelaySeconds: 1, periodSeconds: 2, timeoutSeconds: 2, failureThreshold: 2 };
/**
 * Liveness: 5 failures 2 s apart (10 s of no answer) kill; the first probe only 60 s after the start, as a
 * Node controller starting on a loaded machine may take 50 s to listen (seen at load average 78).
 */
const LIVENESS = { initialDelaySeconds: 60, periodSeconds: 2, timeoutSeconds: 3, failureThreshold: 5 };
/** The chart's terminationGracePeriodSeconds is this + 15: what a hung replica's restart waits out. */
const SHUTDOWN_TIMEOUT_SECONDS = 3;
/** Lease terms of the test install (the chart's are 15/10/2 s). */
const LEASE = { leaseDurationSeconds: 8, renewDeadlineSeconds: 5, retryPeriodSeconds: 1 };
/** A container of the product started on this machine under load (image present): seconds to minutes. */
const CONTAINER_START_MS = 60_000;

describeOnRealNode(
  'The product on a real node (kubelet + containerd, images built from the Dockerfile)',
  () => {
    let hostBefore: HostState;
    let plane: ControlPlane;
    let product: ProductOnNode;
    let nodeDir = '';
    /** The stuck-loop scenario, started once the install is Ready and judged in its own test. */
    let stuckLoop: Promise<string[]>;
    const log = (line: string): void => void process.stderr.write(`[real-node] ${line}\n`);

    beforeAll(async () => {
      hostBefore = captureHostState();
      // The first run on a machine installs packages and builds the kubelet and the images (minutes);
      // .ci/run does that before the tests, so here it finds them cached.
      plane = await ControlPlane.start({ crdPaths: CRD_PATHS, node: true, handleSignals: true, log });
      nodeDir = plane.node?.dir ?? '';
      product = await installProductOnNode(plane, {
        maxRunners: 20,
        // The test-only fault switch the stuck-loop scenario throws, preloaded into the controller's
        // containers of the product image (test/harness/node/fault-switches.ts).
        faultSwitches: ['hang-on-sigusr2'],
        controllerValues: {
          readinessProbe: READINESS,
          livenessProbe: LIVENESS,
          flags: { shutdownTimeoutSeconds: SHUTDOWN_TIMEOUT_SECONDS },
          leaderElection: LEASE,
        },
        log,
      });
      stuckLoop = hangTheStandby();
      // Judged by its own test; a rejection before then is not an unhandled one.
      stuckLoop.catch(() => undefined);
    }, INSTALL_TIMEOUT_MS);

    afterAll(async () => {
      await product?.stop();
      await plane?.stop();
    });

    /** Finds the leader and the standby among two Ready replicas. */
    async function leaderAndStandby(): Promise<{ leader: V1Pod; standby: V1Pod; holder: string }> {
      const kc = product.kubeConfig;
      const ready = await waitForReadyControllers(kc, 3 * CONTAINER_START_MS);
      let found: { leader: V1Pod; standby: V1Pod; holder: string } | undefined;
      // A replica that just became Ready may not have seen the lease yet; the holder renews every second.
      await waitUntil('a Ready replica holding the lease', LEASE.leaseDurationSeconds * 2_000, async () => {
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

    /**
     * The stuck-loop scenario's action and observations: SIGUSR2 hangs the standby's event loop (the
     * test-only fault switch); its readiness probe must take it out of the Service's EndpointSlice, its
     * liveness probe must get it restarted in place, and it must come back Ready. Returns the kubelet's
     * probe and kill events.
     */
    async function hangTheStandby(): Promise<string[]> {
      const kc = product.kubeConfig;
      const { standby } = await leaderAndStandby();
      const name = standby.metadata?.name ?? '';
      const id = containerId(standby, 'manager');
      if (!id || !plane.node) throw new Error(`no manager container in ${name}`);
      const restartsBefore =
        standby.status?.containerStatuses?.find((c) => c.name === 'manager')?.restartCount ?? 0;
      await plane.node.exec(plane.node.ctr('tasks', 'kill', '--signal', 'SIGUSR2', id));
      log(`hung the event loop of the standby ${name}`);
      const endpointReady = async (): Promise<boolean | undefined> => {
        const slices = await getJson<{
          items: { endpoints?: { targetRef?: { name?: string }; conditions?: { ready?: boolean } }[] }[];
        }>(kc, `/apis/discovery.k8s.io/v1/namespaces/${CONTROLLER_NAMESPACE}/endpointslices`);
        return slices.items.flatMap((s) => s.endpoints ?? []).find((e) => e.targetRef?.name === name)
          ?.conditions?.ready;
      };
      // Unready after failureThreshold probes periodSeconds apart (each failing at its timeout), then
      // the endpoint controller's update.
      const unreadyMs =
        (READINESS.failureThreshold * READINESS.periodSeconds + READINESS.timeoutSeconds) * 1_000 + 30_000;
      await waitUntil(`${name} out of the Service (its endpoint not ready)`, unreadyMs, async () =>
        (await endpointReady()) === false ? true : `endpoint ready: ${String(await endpointReady())}`,
      );
      // Killed after failureThreshold liveness failures and the grace period a hung process never uses
      // (it cannot handle SIGTERM), then started again and Ready.
      const restartMs =
        (LIVENESS.failureThreshold * LIVENESS.periodSeconds + LIVENESS.timeoutSeconds) * 1_000 +
        (SHUTDOWN_TIMEOUT_SECONDS + 15) * 1_000 +
        CONTAINER_START_MS;
      await waitUntil(`${name} restarted by the kubelet and Ready again`, restartMs, async () => {
        const pod = await getJson<V1Pod>(kc, `/api/v1/namespaces/${CONTROLLER_NAMESPACE}/pods/${name}`);
        const status = pod.status?.containerStatuses?.find((c) => c.name === 'manager');
        const restarted = (status?.restartCount ?? 0) > restartsBefore;
        return restarted && status?.ready && (await endpointReady()) === true
          ? true
          : `restarts ${status?.restartCount}, ready ${String(status?.ready)}`;
      });
      return (await events(kc, CONTROLLER_NAMESPACE))
        .filter(
          (e) => e.involvedObject?.name === name && (e.reason === 'Unhealthy' || e.reason === 'Killing'),
        )
        .map((e) => e.message ?? '');
    }

    it('runs 20 jobs, each on its own runner pod, all succeed, and leaves nothing behind', async () => {
      const ids = enqueue(product, 20, 'sleep=3');
      // 20 runner containers starting at once on 2 cores, 3 s of job each.
      await waitForJobs(product, '20 jobs completed', ids, 5 * CONTAINER_START_MS);
      const runners = ids.map((id) => product.simulator.job(id)?.runnerName);
      expect(new Set(runners).size).toBe(20);
      expect(runners.every((name) => name?.startsWith('real-node-'))).toBe(true);
      await waitUntilNothingLeft(product);
    });

    it('restarts a controller whose loop is stuck (liveness probe), out of its Service meanwhile (readiness)', async () => {
      const probeEvents = await stuckLoop;
      // The restart was the liveness probe's doing (the readiness probe's was seen on the EndpointSlice):
      // the kubelet's Killing event says so ("Container manager failed liveness probe, will be
      // restarted"). Its Unhealthy events are folded into one "(combined from similar events)" once
      // more than ten come, which 2 s probe periods reach, so their messages cannot be relied on.
      log(`probe events of the hung replica: ${probeEvents.join(' | ')}`);
      expect(probeEvents.some((e) => /failed liveness probe|Liveness probe failed/.test(e))).toBe(true);
    });

    /** How the Lease changed hands, as the replicas wrote it (one clock: they share the host's). */
    interface Handover {
      /** The leader's renewTime read just before the kill. */
      renewedBeforeKillMs: number;
      /** The last renewTime the Lease showed while the killed leader still held it. */
      lastRenewedMs: number;
      /** The new holder's acquireTime. */
      acquiredMs: number;
    }

    /**
     * Kills the leader mid-run as `kill` does, then requires what only a working takeover gives: the
     * other replica holds the Lease (`judge` then says whether it came by release or by expiry), and
     * jobs enqueued after the kill (whose runners only a leader creates) complete, as do those running.
     */
    async function leaderTakeover(
      how: string,
      kill: (leader: V1Pod) => Promise<void>,
      judge: (handover: Handover) => void,
    ): Promise<void> {
      // The standby is the stuck-loop scenario's until the kubelet has restarted it (also when a filter
      // runs this test without that one): a takeover needs a live standby.
      await stuckLoop.catch(() => undefined);
      const { leader, standby, holder } = await leaderAndStandby();
      const before = await controllerLease(product);
      const running = enqueue(product, 3, 'sleep=8');
      await waitUntil('jobs running', 3 * CONTAINER_START_MS, async () => {
        const n = running.filter((id) => product.simulator.job(id)?.state === 'running').length;
        return n >= 2 ? true : `${n} running`;
      });
      const renewedBeforeKillMs = (await controllerLease(product)).renewTimeMs;
      const killedAt = Date.now();
      await kill(leader);
      const after = enqueue(product, 3, 'sleep=1');
      const standbyName = standby.metadata?.name ?? '';
      // Who takes over is whichever live candidate asks first once the Lease is free: the standby, the
      // killed leader's container restarted in place (a new process, a new identity), or the pod the
      // Deployment makes for a deleted one. On a quiet machine the last two start fast enough to win
      // the race against the standby's next retry; what matters is that the dead process's identity
      // is gone from the Lease, and when (judge).
      log(
        `${how}: the leader ${leader.metadata?.name} (${holder}); ${standbyName} or a new process should take over`,
      );
      // The Lease is the standby's once the dead leader's last renewal is leaseDuration old (or at once
      // when it was released); the standby tries every retryPeriod.
      let took = '';
      let lastRenewedMs = renewedBeforeKillMs;
      await waitUntil(
        `a new process to hold the lease`,
        (LEASE.leaseDurationSeconds + LEASE.retryPeriodSeconds) * 1_000 + 30_000,
        async () => {
          const now = await controllerLease(product);
          took = now.holderIdentity;
          if (now.holderIdentity === holder) lastRenewedMs = now.renewTimeMs;
          return now.holderIdentity !== '' && now.holderIdentity !== holder
            ? true
            : `holder ${now.holderIdentity}`;
        },
      );
      const lease = await controllerLease(product);
      expect(lease.leaseTransitions).toBeGreaterThan(before.leaseTransitions);
      log(
        `${took} leads ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill, acquired ` +
          `${lease.acquireTimeMs - lastRenewedMs} ms after the dead leader's last renewal`,
      );
      judge({ renewedBeforeKillMs, lastRenewedMs, acquiredMs: lease.acquireTimeMs });
      await waitForJobs(
        product,
        'the jobs running at the kill and those enqueued after',
        [...running, ...after],
        3 * CONTAINER_START_MS,
      );
      await waitUntilNothingLeft(product);
    }

    it('goes on when the leader container is SIGKILLed mid-run: its lease expires and the other replica takes over', async () => {
      await leaderTakeover(
        'SIGKILLed the manager container',
        async (leader) => {
          const id = containerId(leader, 'manager');
          if (!id || !plane.node) throw new Error(`no manager container in ${leader.metadata?.name}`);
          // From outside, as the OOM killer would: the process releases nothing.
          await plane.node.exec(plane.node.ctr('tasks', 'kill', '--signal', 'SIGKILL', id));
        },
        // A dead leader renews no more, so its last renewal stays on the Lease until the takeover, and
        // the standby may take it only once that renewal is leaseDuration old: never while it may live.
        (handover) =>
          expect(handover.acquiredMs - handover.lastRenewedMs).toBeGreaterThanOrEqual(
            LEASE.leaseDurationSeconds * 1_000,
          ),
      );
    });

    it('goes on when the leading controller pod is force-deleted mid-run: it releases its lease, the other replica takes over at once', async () => {
      await leaderTakeover(
        'force-deleted (--grace-period=0 --force)',
        async (leader) => {
          const res = await kubeRequest(product.kubeConfig, {
            method: 'DELETE',
            path: `/api/v1/namespaces/${CONTROLLER_NAMESPACE}/pods/${leader.metadata?.name}`,
            body: { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0 },
            timeoutMs: 10_000,
          });
          expect(res.status).toBe(200);
        },
        // The kubelet still sends a force-deleted pod's container SIGTERM, and the leader hands the
        // Lease back on its way out: the standby holds it before a renewal made before the kill has
        // expired, which only a release allows (by expiry it is leaseDuration or more).
        (handover) =>
          expect(handover.acquiredMs - handover.renewedBeforeKillMs).toBeLessThan(
            LEASE.leaseDurationSeconds * 1_000,
          ),
      );
    });

    it('judges a runner container killed mid-job as upstream ARC says: the runner with the job is deleted, its registration removed, no new pod for it', async () => {
      const kc = product.kubeConfig;
      const [id] = enqueue(product, 1, 'sleep=120');
      let runnerName = '';
      await waitUntil('the job running on a runner pod', 3 * CONTAINER_START_MS, async () => {
        const job = product.simulator.job(id);
        runnerName = job?.runnerName ?? '';
        return job?.state === 'running' && runnerName ? true : `job ${job?.state}`;
      });
      const pod = await getJson<V1Pod>(kc, `/api/v1/namespaces/${RUNNER_NAMESPACE}/pods/${runnerName}`);
      const id137 = containerId(pod, 'runner');
      if (!id137 || !plane.node) throw new Error(`no runner container in ${runnerName}`);
      // SIGKILL from outside, as the OOM killer or a node problem would: the runner reports nothing.
      await plane.node.exec(plane.node.ctr('tasks', 'kill', '--signal', 'SIGKILL', id137));
      log(`killed the runner container of ${runnerName} (${id137.slice(0, 12)}) mid-job`);
      await waitUntil(`pod ${runnerName} Failed with exit code 137`, 60_000, async () => {
        const p = await getJson<V1Pod>(kc, `/api/v1/namespaces/${RUNNER_NAMESPACE}/pods/${runnerName}`).catch(
          () => undefined,
        );
        const code = p?.status?.containerStatuses?.find((c) => c.name === 'runner')?.state?.terminated
          ?.exitCode;
        return code === 137 || !p ? true : `phase ${p.status?.phase}`;
      });
      // Upstream's reconciler: a failed pod whose runner has a job is not restarted: the EphemeralRunner is deleted
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
      await waitUntilNothingLeft(product, 180_000);
    });

    it('fails a runner whose image cannot be pulled at once, with the kubelet reason, and runs the job once the template is fixed', async () => {
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
      // The kubelet reports ErrImageNeverPull as soon as the pod's sandbox is up; the start watchdog
      // (docs/ephemeral-runner.md) treats it as permanent and fails the runner at once, not after
      // RUNNER_START_TIMEOUT (10 min): its Warning Event names the reason and the image.
      let failure = '';
      await waitUntil(
        'the runner failed by the start watchdog, with the kubelet reason',
        3 * CONTAINER_START_MS,
        async () => {
          const warning = (await events(kc, RUNNER_NAMESPACE)).find(
            (e) =>
              e.involvedObject?.kind === 'EphemeralRunner' &&
              e.type === 'Warning' &&
              e.reason === 'RunnerStartFailed' &&
              e.message?.includes(missing),
          );
          failure = warning ? `${warning.involvedObject?.name}: ${warning.message}` : '';
          const waiting = (await listPods(kc, RUNNER_NAMESPACE))
            .map(
              (p) =>
                `${p.metadata?.name} ${p.status?.containerStatuses?.[0]?.state?.waiting?.reason ?? p.status?.phase}`,
            )
            .join(', ');
          return warning ? true : `no RunnerStartFailed event yet; pods: ${waiting || 'none'}`;
        },
      );
      log(`runner failed: ${failure}`);
      expect(failure).toContain('ErrImageNeverPull');
      expect(product.simulator.job(id)?.state).not.toBe('completed');
      await setImage(good);
      // The set replaces the failed runner after its failure backoff (5 s base), from the fixed template
      // (runners failed before the fix are expected here: only the job's outcome counts).
      await waitUntil('the job run by a runner of the fixed template', 3 * CONTAINER_START_MS, async () => {
        const job = product.simulator.job(id);
        return job?.state === 'completed' && job.result === 'succeeded' ? true : `job ${job?.state}`;
      });
      await waitUntilNothingLeft(product, 180_000);
    });

    it('leaves the host as it found it: sysctls, iptables, links, mounts, cgroups, processes', async () => {
      const nodePids = [...plane.processes.map((p) => p.pid), ...(plane.node?.pids ?? [])];
      await product.stop();
      await plane.stop();
      expect(await settledHostChanges(hostBefore, [nodeDir])).toEqual([]);
      expect(leftoverProcesses(nodePids, nodeDir)).toEqual([]);
    });
  },
);
