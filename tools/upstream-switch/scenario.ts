import { copyFileSync, cpSync, createWriteStream, mkdirSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { join } from 'node:path';
import type { V1Lease, V1Namespace } from '@kubernetes/client-node';
import {
  Annotations,
  AutoscalingListenerKind,
  type AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  type EphemeralRunner,
  EphemeralRunnerKind,
  EphemeralRunnerSetKind,
} from '@aro/api';
import { KubeClient, LeaseKind, NamespaceKind } from '@aro/kube';
import { createLogger } from '@aro/observability';
import { DEFAULT_PAT, startSimulator, type RunningSimulator } from '../../apps/simulator/src';
import { ControlPlane } from '../../test/harness/control-plane';
import { ControllerProcess } from '../../test/harness/controller-process';
import { CRD_PATHS } from '../../test/harness/global-setup';
import { ListenerPodPlayer } from '../../test/harness/listener-pod-player';
import { freePort } from '../../test/harness/ports';
import type { ManagedProcess } from '../../test/harness/processes';
import { RunnerPlayer } from '../../test/harness/runner-player';
import { render, type Manifest } from '../../test/integration/charts/helm-chart';
import { LISTENER_MAIN } from '../../test/sandbox/apps';
import { applyManifests, deleteManifests, manifestsLeft } from '../../test/sandbox/charts';
import { serviceAccountUid, writeServiceAccountKubeconfig } from '../../test/sandbox/identities';
import { SwitchObserver, leftovers } from './observe';
import {
  isUpstreamListenerPod,
  startUpstreamManager,
  upstreamListenerCommand,
  type UpstreamBuild,
} from './upstream';

export type Side = 'aro' | 'upstream';

export interface ScenarioOptions {
  build: UpstreamBuild;
  /** The chart rendered for the scale set (upstream's gha-runner-scale-set by default). */
  chart: string;
  /** UPSTREAM_COMPATIBILITY given to ARO: the upstream version the run switches with. */
  compat: string;
  order: Side[];
  longJobSeconds: number;
  shortJobSeconds: number;
  /** Between starting the next controller and queueing the five jobs: what it does to idle runners shows here. */
  settleSeconds: number;
  workDir: string;
  log: (line: string) => void;
}

export interface SwitchResult {
  from: Side;
  to: Side;
  listenersMax: number;
  moreThanOneListenerMs: number;
  listenerStarts: number;
  sessionCreates: number;
  idleAtSwitch: number;
  idleDeregistered: number;
  /** From stopping the old controller to the new one holding the Lease. */
  leaseTakenMs: number;
  belowMinIdleMs: number;
  longJobOnItsRunner: boolean;
  jobsOnce: string;
  refillMs: number | null;
  leakedRegistrations: number;
}

export interface ScenarioResult {
  order: Side[];
  install: { listenersMax: number };
  switches: SwitchResult[];
  uninstall: { by: Side; seconds: number | null; left: string[] };
}

const CONTROLLER_NAMESPACE = 'arc-systems';
const RUNNER_NAMESPACE = 'arc-runners';
const SET = 'arc-runners';
const MIN_RUNNERS = 2;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Throws when the controller that should be running has exited: waiting on would only time out. */
let guard: () => void = () => undefined;

async function until<T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined> | T | undefined,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    guard();
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(250);
  }
}

/** One direction: a fresh control plane and service, the set installed under order[0], switched along order, uninstalled. */
export async function runScenario(o: ScenarioOptions): Promise<ScenarioResult> {
  const plane = await ControlPlane.start({
    crdPaths: CRD_PATHS,
    handleSignals: true,
    log: (l) => o.log(`[control-plane] ${l}`),
  });
  const stops: Array<() => Promise<unknown>> = [() => plane.stop()];
  try {
    process.env.ARO_TEST_KUBECONFIG = plane.info.kubeconfigPath;
    process.env.ARO_TEST_CONTROL_PLANE = plane.infoPath;
    const dir = join(o.workDir, o.order.join('-'));
    mkdirSync(join(dir, 'identities'), { recursive: true, mode: 0o700 });
    const admin = plane.kubeConfig();
    const kube = new KubeClient(admin, { userAgent: 'aro-upstream-switch' });
    stops.unshift(async () => kube.close());
    for (const name of [CONTROLLER_NAMESPACE, RUNNER_NAMESPACE]) {
      await kube.create<V1Namespace>(NamespaceKind, { metadata: { name } });
    }
    const simLog = createWriteStream(join(dir, 'simulator.log'));
    const sim: RunningSimulator = await startSimulator({
      port: 0,
      seed: { timing: { autoStartJobs: true, sessionIdleTimeoutMs: 15_000, longPollTimeoutMs: 10_000 } },
      logger: createLogger({ level: 'info', format: 'json', destination: simLog }),
    });
    stops.unshift(async () => {
      await sim.stop();
      simLog.end();
    });

    // The kubelet's stand-ins. The next job to start runs long when one was asked for (the only job
    // queued at that moment is the long one).
    let longPending = false;
    const runners = new RunnerPlayer({
      kubeConfig: admin,
      namespace: RUNNER_NAMESPACE,
      service: sim,
      jobDurationMs: () => {
        const long = longPending;
        longPending = false;
        return (long ? o.longJobSeconds : o.shortJobSeconds) * 1_000;
      },
      // A real runner waits for its job as long as it takes: idle runners must outlive every switch.
      jobWaitTimeoutMs: 3_600_000,
    }).start();
    stops.unshift(() => runners.stop());
    const kubeconfigs = new Map<string, string>();
    const listeners = new ListenerPodPlayer({
      kubeConfig: admin,
      kubeconfigPath: plane.info.kubeconfigPath,
      kubeconfigForPod: async (pod) => {
        const namespace = pod.metadata?.namespace ?? '';
        const account = pod.spec?.serviceAccountName ?? 'default';
        const uid = await serviceAccountUid(admin, namespace, account);
        if (!uid) throw new Error(`its service account ${namespace}/${account} does not exist (yet)`);
        const key = `${namespace}/${account}/${uid}`;
        const known = kubeconfigs.get(key);
        if (known) return known;
        const path = join(dir, 'identities', `${account}-${uid.slice(0, 8)}.kubeconfig`);
        await writeServiceAccountKubeconfig(admin, namespace, account, path);
        kubeconfigs.set(key, path);
        return path;
      },
      commandFor: async (pod, run) =>
        isUpstreamListenerPod(pod) ? upstreamListenerCommand(o.build, run) : undefined,
      namespace: CONTROLLER_NAMESPACE,
      listenerMain: LISTENER_MAIN,
      workDir: join(dir, 'listeners'),
      pidFile: join(plane.info.runDir, 'pids'),
      freePort,
      log: (l) => o.log(`  ${l}`),
    }).start();
    stops.unshift(async () => {
      // The player removes its folder on stop: the listeners' logs are kept beside the run's.
      cpSync(join(dir, 'listeners'), join(dir, 'listener-logs'), { recursive: true });
      await listeners.stop();
    });

    // The controllers, one at a time: ARO from source, upstream's manager from its build.
    const aro = new ControllerProcess({
      namespace: CONTROLLER_NAMESPACE,
      env: { UPSTREAM_COMPATIBILITY: o.compat, LEADER_ELECTION_ID: 'arc-gha-rs-controller' },
    });
    let upstream: ManagedProcess | undefined;
    let upstreamStarts = 0;
    stops.unshift(async () => {
      await aro.stop();
      for (const h of aro.history) copyFileSync(h.logFile, join(dir, `aro-${basename(h.logFile)}`));
      await aro.close();
      await upstream?.stop(30_000);
    });
    let current: Side | undefined;
    guard = () => {
      if (current === 'aro' && !aro.running) throw new Error(`ARO's controller exited:\n${aro.tail()}`);
      if (current === 'upstream' && upstream && !upstream.running) {
        throw new Error(`upstream's manager exited:\n${upstream.logTail(30)}`);
      }
    };
    const startController = async (side: Side): Promise<void> => {
      current = side;
      if (side === 'aro') return aro.start();
      upstream = await startUpstreamManager({
        build: o.build,
        kubeconfigPath: plane.info.kubeconfigPath,
        namespace: CONTROLLER_NAMESPACE,
        dir: join(dir, `upstream-manager-${++upstreamStarts}`),
        logFile: join(dir, `upstream-manager-${upstreamStarts}.log`),
        pidFile: join(plane.info.runDir, 'pids'),
      });
    };
    const stopController = async (side: Side): Promise<void> => {
      current = undefined;
      if (side === 'aro') await aro.stop();
      else await upstream?.stop(30_000);
    };

    const manifests: Manifest[] = await render(o.chart, {
      release: SET,
      namespace: RUNNER_NAMESPACE,
      setJson: {
        githubConfigUrl: sim.configUrl({ org: 'octo' }),
        githubConfigSecret: { github_token: DEFAULT_PAT },
        minRunners: MIN_RUNNERS,
        maxRunners: 10,
        controllerServiceAccount: { namespace: CONTROLLER_NAMESPACE, name: 'arc-gha-rs-controller' },
      },
    });
    // Known once the controller registered the scale set; the observer samples before that.
    const known: { scaleSetId?: number } = {};
    const observer = new SwitchObserver({
      kube,
      sim,
      controllerNamespace: CONTROLLER_NAMESPACE,
      scaleSetId: () => known.scaleSetId,
    });
    observer.start();
    stops.unshift(async () => observer.stop());
    // Read from the service, not from the last sample: a job may have just taken one.
    const idleNow = (): string[] =>
      known.scaleSetId === undefined
        ? []
        : sim
            .registrations({ scaleSetId: known.scaleSetId })
            .filter((r) => r.status === 'idle' && r.jobId === null)
            .map((r) => r.name);
    const waitIdle = (what: string, timeoutMs = 180_000) =>
      until(what, timeoutMs, () => (idleNow().length >= MIN_RUNNERS ? true : undefined));

    o.log(`[${o.order.join(' -> ')}] installing under ${o.order[0]}`);
    const installedAt = Date.now();
    await startController(o.order[0]);
    await applyManifests(admin, manifests);
    const scaleSetId = await until('the scale set id on the AutoscalingRunnerSet', 120_000, async () => {
      const ars = await kube.get<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, RUNNER_NAMESPACE, SET);
      const id = Number(ars.metadata?.annotations?.[Annotations.runnerScaleSetId]);
      return id > 0 ? id : undefined;
    });
    known.scaleSetId = scaleSetId;
    await waitIdle(`${MIN_RUNNERS} idle runners after the install`);
    const install = { listenersMax: observer.listenersSince(installedAt).max };

    const switches: SwitchResult[] = [];
    for (let i = 1; i < o.order.length; i++) {
      const from = o.order[i - 1];
      const to = o.order[i];
      longPending = true;
      const long = sim.enqueueJob({ scaleSetId, displayName: `long job before switch ${i}` });
      const longRunner = await until(`the long job ${long.jobId} running`, 120_000, () => {
        const j = sim.job(long.jobId);
        return j?.state === 'running' ? (j.runnerName ?? undefined) : undefined;
      });
      await waitIdle(`${MIN_RUNNERS} idle runners beside the long job`, 120_000);
      const idleAtSwitch = idleNow();
      await dumpObjects(kube, join(dir, `switch-${i}-before.json`));
      const holderBefore = await leaseHolder(kube);
      const listenerStartsBefore = listeners.played.size;
      const sessionCreatesBefore = observer.sessionCreates();
      o.log(
        `[${o.order.join(' -> ')}] switch ${i}: ${from} -> ${to}; long job on ${longRunner}, idle ${idleAtSwitch.join(' ')}`,
      );
      const switchAt = Date.now();
      await stopController(from);
      await startController(to);
      // The new controller acts once it holds the Lease (the old one may have left it to expire):
      // the settle window, where a drain would show, starts then.
      await until(`${to} to take the Lease`, 120_000, async () => {
        const holder = await leaseHolder(kube);
        return holder && holder !== holderBefore ? true : undefined;
      });
      const leaseTakenMs = Date.now() - switchAt;
      const ledAt = Date.now();
      await sleep(o.settleSeconds * 1_000);
      const settledAt = Date.now();
      const short = Array.from({ length: 5 }, (_, k) =>
        sim.enqueueJob({ scaleSetId, displayName: `job ${k + 1} after switch ${i}` }),
      );
      const ids = [long.jobId, ...short.map((j) => j.jobId)];
      const jobsDone = await until(
        'the long job and the five jobs completed',
        (o.longJobSeconds + 240) * 1_000,
        () => (ids.every((id) => sim.job(id)?.state === 'completed') ? true : undefined),
      ).catch(() => false);
      const doneAt = Date.now();
      const refilled = await waitIdle(`${MIN_RUNNERS} idle runners after the jobs`, 120_000).then(
        () => Date.now() - doneAt,
        () => null,
      );
      const jobs = ids.map((id) => sim.job(id));
      const once = jobs.filter(
        (j) => j?.state === 'completed' && j.result === 'succeeded' && j.startAttempts === 1,
      ).length;
      const ers = await kube.list<EphemeralRunner>(EphemeralRunnerKind, { namespace: RUNNER_NAMESPACE });
      const erNames = new Set(ers.map((r) => r.metadata?.name));
      const listenerView = observer.listenersSince(switchAt);
      switches.push({
        from,
        to,
        listenersMax: listenerView.max,
        moreThanOneListenerMs: listenerView.moreThanOneMs,
        listenerStarts: listeners.played.size - listenerStartsBefore,
        sessionCreates: observer.sessionCreates() - sessionCreatesBefore,
        idleAtSwitch: idleAtSwitch.length,
        idleDeregistered: observer.deregisteredIdle(idleAtSwitch).length,
        leaseTakenMs,
        belowMinIdleMs: observer.longestBelowIdle(ledAt, settledAt, MIN_RUNNERS),
        longJobOnItsRunner:
          sim.job(long.jobId)?.state === 'completed' && sim.job(long.jobId)?.runnerName === longRunner,
        jobsOnce: `${once}/${ids.length}${jobsDone ? '' : ' (timed out)'}`,
        refillMs: refilled,
        leakedRegistrations: sim.registrations({ scaleSetId }).filter((r) => !erNames.has(r.name)).length,
      });
      await dumpObjects(kube, join(dir, `switch-${i}-after.json`));
      o.log(`[${o.order.join(' -> ')}] switch ${i} judged: ${JSON.stringify(switches.at(-1))}`);
    }

    const by = o.order.at(-1) ?? 'aro';
    o.log(`[${o.order.join(' -> ')}] uninstalling under ${by}`);
    const uninstallAt = Date.now();
    await deleteManifests(admin, manifests);
    const gone = await until('the uninstall to finish', 180_000, async () => {
      const left = await manifestsLeft(admin, manifests);
      const rest = await leftovers({
        kube,
        sim,
        namespaces: [CONTROLLER_NAMESPACE, RUNNER_NAMESPACE],
        scaleSetId,
      });
      return left.length === 0 && rest.length === 0 ? true : undefined;
    }).then(
      () => (Date.now() - uninstallAt) / 1_000,
      () => null,
    );
    const left = [
      ...(await manifestsLeft(admin, manifests)),
      ...(await leftovers({
        kube,
        sim,
        namespaces: [CONTROLLER_NAMESPACE, RUNNER_NAMESPACE],
        scaleSetId,
      })),
    ];
    const lease = await kube
      .get<V1Lease>(LeaseKind, CONTROLLER_NAMESPACE, 'arc-gha-rs-controller')
      .catch(() => undefined);
    o.log(
      `[${o.order.join(' -> ')}] done; Lease held by ${lease?.spec?.holderIdentity ?? '-'}; logs in ${dir}`,
    );
    return { order: o.order, install, switches, uninstall: { by, seconds: gone, left } };
  } finally {
    for (const stop of stops)
      await stop().catch((err: unknown) => o.log(`cleanup: ${(err as Error).message}`));
  }
}

async function leaseHolder(kube: KubeClient): Promise<string | undefined> {
  const lease = await kube
    .get<V1Lease>(LeaseKind, CONTROLLER_NAMESPACE, 'arc-gha-rs-controller')
    .catch(() => undefined);
  return lease?.spec?.holderIdentity ?? undefined;
}

/** The scale set's objects as they are, for a person reading why a switch went as it did. */
async function dumpObjects(kube: KubeClient, path: string): Promise<void> {
  const objects: Record<string, unknown[]> = {};
  for (const [kind, namespace] of [
    [AutoscalingRunnerSetKind, RUNNER_NAMESPACE],
    [EphemeralRunnerSetKind, RUNNER_NAMESPACE],
    [EphemeralRunnerKind, RUNNER_NAMESPACE],
    [AutoscalingListenerKind, CONTROLLER_NAMESPACE],
  ] as const) {
    objects[kind.kind] = await kube.list(kind, { namespace });
  }
  writeFileSync(path, JSON.stringify(objects, null, 2));
}
