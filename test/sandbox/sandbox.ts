import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Namespace } from '@kubernetes/client-node';
import { KubeClient, NamespaceKind } from '@aro/kube';
import { DEFAULT_PAT, type RunningSimulator } from '../../apps/simulator/src';
import { ControlPlane } from '../harness/control-plane';
import { CRD_PATHS } from '../harness/global-setup';
import type { ListenerPodPlayer } from '../harness/listener-pod-player';
import { processExists } from '../harness/processes';
import { SharedListenerReplicas } from '../harness/shared-listener-replicas';
import type { RunnerPlayer } from '../harness/runner-player';
import {
  CONTROLLER_NAMESPACE,
  CONTROLLER_RELEASE,
  RUNNER_NAMESPACE,
  applyManifests,
  ensureHelm,
  renderControllerChart,
  renderScaleSetChart,
} from './charts';
import type { Manifest } from '../integration/charts/helm-chart';
import { identityOf, writeServiceAccountKubeconfig } from './identities';
import { ControllerReplicas } from './controllers';
import { startPlayers } from './players';
import type { SandboxOptions } from './options';
import { ProgressView, jobCounts, type Snapshot } from './progress';
import { keepInstructions, type Identity, type SandboxReport } from './report';
import { drainScaleSet } from './drain';
import { forbiddenLines, leakAudits, leftOf } from './observe';
import { percentile } from './stats';
import { Workload } from './workload';
import { SIMULATOR_PORT, startSandboxSimulator } from './simulator';
import { leaderThenListenerKills } from './chaos-kills';
import { WorkloadObserver } from './workload-observer';

export { renderReport, type SandboxReport } from './report';

export { SIMULATOR_PORT };

export interface SandboxIo {
  out: NodeJS.WritableStream;
  tty: boolean;
  /** Aborted by Ctrl-C: the run stops where it is, cleans up and still reports. */
  signal: AbortSignal;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The running product and its stand-ins, as a hook sees them (the chaos runner injects its faults here). */
export interface SandboxParts {
  plane: ControlPlane;
  /** An admin client. */
  kube: KubeClient;
  sim: RunningSimulator;
  controllers: ControllerReplicas;
  listeners: ListenerPodPlayer;
  /** `--listener-mode shared`: the shared listener Deployment's replicas (no listener pods then). */
  sharedListeners?: SharedListenerReplicas;
  runners: RunnerPlayer;
  workload: Workload;
  /** The scale-set chart's release (the scale set's name) and its objects as applied. */
  release: string;
  scaleSet: Manifest[];
  /** An event line in the run's output. */
  event: (line: string) => void;
}

/**
 * What a caller in-process adds to a run (none for `npm run sandbox`): the chaos runner's faults and
 * the invariants it reads before anything is stopped.
 */
export interface SandboxHooks {
  /** Once the workload has started. */
  started?(parts: SandboxParts): Promise<void>;
  /** At each look during the workload (about once a second). */
  tick?(parts: SandboxParts, snapshot: Snapshot): Promise<void>;
  /** Once the workload is over, before the uninstall (the scale set and its session still exist). */
  workloadOver?(parts: SandboxParts): Promise<void>;
  /** After the uninstall and its wait, before anything is stopped. */
  drained?(parts: SandboxParts): Promise<void>;
}

/**
 * `npm run sandbox`: the whole product on this machine, on loopback. Brings up the control plane, the
 * simulator as GitHub, the controller chart (its RBAC applied, its Deployment's replicas played as
 * processes under its service account), the scale-set chart, and the kubelet players; queues the
 * workload; shows progress; then uninstalls the scale set, checks what is left, stops everything and
 * reports.
 */
export async function runSandbox(
  options: SandboxOptions,
  io: SandboxIo,
  hooks: SandboxHooks = {},
): Promise<SandboxReport> {
  const view = new ProgressView(io.out, io.tty);
  const began = Date.now();
  view.event(
    `ARO sandbox: ${options.jobs} jobs at ${options.rate}/s, runners ${options.minRunners}..${options.maxRunners}, ${options.duration} s each`,
  );

  const chaos: string[] = [];
  const cleanup: Array<() => Promise<void>> = [];
  let plane: ControlPlane | undefined;
  let report: SandboxReport | undefined;
  const pids: number[] = [];
  const folders: string[] = [];
  let last: Snapshot | undefined;
  try {
    const helm = await ensureHelm((l) => view.event(`[helm] ${l}`));
    plane = await ControlPlane.start({ crdPaths: CRD_PATHS, log: (l) => view.event(`[control-plane] ${l}`) });
    const cp = plane;
    folders.push(cp.info.runDir);
    pids.push(cp.info.pids.etcd, cp.info.pids.kubeApiserver, cp.info.pids.reaper);
    if (cp.info.pids.kubeControllerManager) pids.push(cp.info.pids.kubeControllerManager);
    // pod-lifecycle.ts and users.ts find the control plane through these, as in an integration test.
    // (Put back at the end: a jest worker that runs the sandbox goes on with the shared control plane.)
    const envBefore = {
      kubeconfig: process.env.ARO_TEST_KUBECONFIG,
      controlPlane: process.env.ARO_TEST_CONTROL_PLANE,
    };
    cleanup.push(async () => restoreEnv(envBefore));
    process.env.ARO_TEST_KUBECONFIG = cp.info.kubeconfigPath;
    process.env.ARO_TEST_CONTROL_PLANE = cp.infoPath;
    const workDir = join(cp.info.runDir, 'sandbox');
    const identityDir = join(workDir, 'identities');
    mkdirSync(identityDir, { recursive: true, mode: 0o700 });
    const kube = new KubeClient(cp.kubeConfig(), { userAgent: 'aro-sandbox' });
    cleanup.push(async () => kube.close());
    // `helm install --create-namespace`: the charts do not make their namespaces.
    for (const name of [CONTROLLER_NAMESPACE, RUNNER_NAMESPACE]) {
      await kube.create<V1Namespace>(NamespaceKind, { metadata: { name } });
    }

    const simulator = await startSandboxSimulator(workDir);
    const sim = simulator.sim;
    cleanup.push(simulator.stop);
    const configUrl = sim.configUrl({ org: 'octo' });
    view.event(`simulator (GitHub + Actions service) at ${sim.url}; config URL ${configUrl}`);

    // The controller chart: everything but the Deployment applied as rendered; the Deployment's pods
    // played as processes with its env, under its service account.
    const controllerChart = await renderControllerChart(options.listenerMode);
    await applyManifests(
      cp.kubeConfig(),
      controllerChart.manifests.filter((m) => m.kind !== 'Deployment'),
    );
    view.event(
      `installed charts/aro-controller (${helm}; release ${CONTROLLER_RELEASE} in ${CONTROLLER_NAMESPACE}): ` +
        controllerChart.manifests
          .filter((m) => m.kind !== 'Deployment')
          .map((m) => `${m.kind}/${m.metadata.name}`)
          .join(', '),
    );
    const controllerKubeconfig = await writeServiceAccountKubeconfig(
      cp.kubeConfig(),
      CONTROLLER_NAMESPACE,
      controllerChart.serviceAccountName,
      join(identityDir, 'controller.kubeconfig'),
    );
    const controllers = new ControllerReplicas({
      container: controllerChart.container,
      namespace: CONTROLLER_NAMESPACE,
      serviceAccountName: controllerChart.serviceAccountName,
      kubeconfigPath: controllerKubeconfig,
      logDir: workDir,
      pidFile: join(cp.info.runDir, 'pids'),
      kube,
      replicas: controllerChart.replicas,
    });
    cleanup.push(() => controllers.stop());
    const lease = controllers.lease;
    view.event(
      `starting the Deployment's ${controllerChart.replicas} replicas (apps/controller as service account ` +
        `${CONTROLLER_NAMESPACE}/${controllerChart.serviceAccountName}, leader election on ${lease.namespace}/${lease.name})`,
    );
    await controllers.start();
    view.event(
      `controllers up: ${controllers.replicas.map((r) => `${r.name} :${r.port} (pid ${r.process.pid})`).join(', ')}`,
    );
    // A Deployment restarts a pod that died, however it died (a chaos kill, a person's kill -9 during
    // --keep, a crash); so does the sandbox, at each look.
    const superviseControllers = async (): Promise<void> => {
      for (const r of await controllers.restartExited()) {
        view.event(`restarted ${r.name} (pid ${r.process.pid}), as its Deployment would`, last);
      }
      for (const name of (await sharedListeners?.restartExited()) ?? []) {
        view.event(`restarted ${name}, as the shared listener's Deployment would`, last);
      }
    };

    const players = startPlayers({
      admin: cp.kubeConfig(),
      adminKubeconfigPath: cp.info.kubeconfigPath,
      sim,
      options,
      identityDir,
      workDir,
      pidFile: join(cp.info.runDir, 'pids'),
      log: (l) => view.event(`  ${l}`, last),
    });
    const { runners: runnerPlayer, listeners: listenerPlayer } = players;
    cleanup.push(() => runnerPlayer.stop());
    cleanup.push(() => listenerPlayer.stop());

    // --listener-mode shared: the chart's shared listener Deployment, its replicas played as processes
    // with its container's env, under its service account (the chart's Role and the sets' listener
    // Roles the controller binds to it are all it has).
    let sharedListeners: SharedListenerReplicas | undefined;
    let sharedKubeconfig: string | undefined;
    const sharedChart = controllerChart.sharedListener;
    if (sharedChart) {
      sharedKubeconfig = await writeServiceAccountKubeconfig(
        cp.kubeConfig(),
        CONTROLLER_NAMESPACE,
        sharedChart.serviceAccountName,
        join(identityDir, 'shared-listener.kubeconfig'),
      );
      const replicas = new SharedListenerReplicas({
        container: sharedChart.container,
        kubeconfigPath: sharedKubeconfig,
        replicas: sharedChart.replicas,
        prefix: sharedChart.serviceAccountName,
        logDir: workDir,
        pidFile: join(cp.info.runDir, 'pids'),
      });
      sharedListeners = replicas;
      cleanup.push(() => replicas.stop());
      await replicas.start();
      view.event(
        `shared listener up: ${replicas.replicas.map((r) => `${r.name} (pid ${r.process.pid})`).join(', ')} as ` +
          `${CONTROLLER_NAMESPACE}/${sharedChart.serviceAccountName}`,
      );
    }

    // The scale-set chart with its defaults, given only what the sandbox must: the simulator's URL,
    // its token, the runner bounds from the flags, and the controller's service account (which
    // `helm install` would look up in the cluster and `helm template` cannot).
    const release = options.name;
    const scaleSet = await renderScaleSetChart({
      release,
      githubConfigUrl: configUrl,
      githubToken: DEFAULT_PAT,
      minRunners: options.minRunners,
      maxRunners: options.maxRunners,
      controllerServiceAccount: {
        namespace: CONTROLLER_NAMESPACE,
        name: controllerChart.serviceAccountName,
      },
    });
    await applyManifests(cp.kubeConfig(), scaleSet);
    view.event(
      `installed charts/aro-scale-set (release ${release} in ${RUNNER_NAMESPACE}, ` +
        `minRunners ${options.minRunners}, maxRunners ${options.maxRunners}): ` +
        scaleSet.map((m) => `${m.kind}/${m.metadata.name}`).join(', '),
    );

    // The workload starts once the listener has opened its message session: before that nobody
    // would ask for runners, and the queue wait would measure the listener's start-up.
    const sessionDeadline = Date.now() + 180_000;
    while (sim.sessions().length === 0 && !io.signal.aborted) {
      if (Date.now() > sessionDeadline) {
        throw new Error(
          `no listener opened a message session within 180 s; player errors: ${listenerPlayer.errors.slice(-3).join('; ') || 'none'}`,
        );
      }
      await sleep(250);
    }
    view.event('listener connected: its message session is open; queueing the jobs');

    const workload = new Workload({
      sim,
      jobs: options.jobs,
      rate: options.rate,
      waveSeconds: options.waveSeconds,
      labels: [release],
    });
    const observer = await WorkloadObserver.start({
      kube,
      kubeConfig: cp.kubeConfig(),
      sim,
      workload,
      controllers,
      listeners: listenerPlayer,
      event: (line) => view.event(line, last),
    });
    const workloadBegan = Date.now();
    workload.start();
    cleanup.push(async () => workload.stop());

    const parts: SandboxParts = {
      plane: cp,
      kube,
      sim,
      controllers,
      listeners: listenerPlayer,
      sharedListeners,
      runners: runnerPlayer,
      workload,
      release,
      scaleSet,
      event: (line) => view.event(line, last),
    };
    const builtIn = options.chaos
      ? leaderThenListenerKills(options.jobs, (line) => {
          chaos.push(line);
          parts.event(line);
        })
      : {};
    await hooks.started?.(parts);
    const deadline = workloadBegan + options.timeoutSeconds * 1_000;

    // The workload: run until every job has finished, the timeout passes, or Ctrl-C.
    while (!io.signal.aborted) {
      const look = await observer.look().catch((err: Error) => err);
      if (look instanceof Error) {
        // A fault may have taken the apiserver down (a chaos restart): look again in a second.
        view.event(`the look failed, trying again: ${look.message}`, last);
      } else {
        last = look;
        view.update(last);
        if (workload.queuedAll && last.jobs.succeeded + last.jobs.failed >= options.jobs) break;
      }
      if (Date.now() > deadline) {
        view.event(`!!! the workload did not finish within ${options.timeoutSeconds} s; stopping`, last);
        break;
      }
      if (last) {
        await builtIn.tick?.(parts, last);
        await hooks.tick?.(parts, last);
      }
      await superviseControllers();
      await sleep(1_000);
    }
    const workloadMs = Date.now() - workloadBegan;
    workload.stop();
    // The uninstall needs the apiserver: a member a fault restarted near the end must be serving first.
    await cp.restartsSettled();
    await hooks.workloadOver?.(parts);

    if (options.keep && !io.signal.aborted) {
      io.out.write(
        keepInstructions({
          kubeconfigPath: cp.info.kubeconfigPath,
          simUrl: sim.url,
          simulatorPort: SIMULATOR_PORT,
          controllers: controllers.replicas.map((r) => ({
            name: r.name,
            pid: r.process.pid,
            metricsUrl: controllers.metricsUrl(r),
          })),
          listenerMetrics: listenerPlayer.running().map((l) => l.metricsUrl),
          lease,
          workDir,
          release,
        }),
      );
      // Until Ctrl-C the players keep playing, for what a person applies or queues, and a replica that
      // dies is started again; then the same uninstall and count as without --keep.
      while (!io.signal.aborted) {
        await superviseControllers();
        await sleep(1_000);
      }
    }

    const leakAudit = await leakAudits(kube).catch((err: Error) => [`could not read: ${err.message}`]);

    // Drain: `helm uninstall` of the scale set; the controller releases its runners, its listener and
    // its registrations, then the chart's protected objects; whatever it leaves behind is counted.
    // Skipped after a Ctrl-C of a run without --keep: the person wants it stopped, not tidied.
    const chartLeft =
      !io.signal.aborted || options.keep
        ? await drainScaleSet({
            kube,
            kubeConfig: cp.kubeConfig(),
            release,
            scaleSet,
            // A failed look (a /metrics read timing out at load 40: chaos seed 111; an apiserver a
            // fault restarted) is told and tried again at the next tick, as in the workload's loop.
            tick: async () => {
              const look = await observer.look().catch((err: Error) => err);
              if (look instanceof Error)
                return view.event(`the look failed, trying again: ${look.message}`, last);
              last = look;
              view.update(last);
            },
            event: (line) => view.event(line, last),
          })
        : [];
    await hooks.drained?.(parts);
    view.release();
    const chartObjects = scaleSet.map((m) => `${m.kind}/${m.metadata.name}`);
    const left = await leftOf(kube, release, chartObjects);
    const jobs = sim.jobs().filter((j) => workload.jobIds.includes(j.jobId));
    const waits = jobs
      .filter((j) => !j.runnerAssignTime.startsWith('0001'))
      .map((j) => Date.parse(j.runnerAssignTime) - Date.parse(j.queueTime));
    const counts = jobCounts(jobs);
    // Read before the players remove their folders: any RBAC refusal the product met on the way.
    const logs = [
      ...controllers.replicas.map((r) => r.process.logFile),
      ...[...listenerPlayer.played.values()].map((l) => l.process.logFile),
      ...(sharedListeners?.replicas.map((r) => r.process.logFile) ?? []),
    ];
    const refusals = logs.flatMap(forbiddenLines);
    const identities: Identity[] = [
      { who: 'controller' as const, ...(await identityOf(controllerKubeconfig)) },
      ...players.listenerIdentities.map((identity) => ({ who: 'listener' as const, ...identity })),
      ...(sharedKubeconfig ? [{ who: 'listener' as const, ...(await identityOf(sharedKubeconfig)) }] : []),
    ];
    report = {
      wallMs: workloadMs,
      jobs: options.jobs,
      succeeded: counts.succeeded,
      failed: counts.failed,
      unfinished: options.jobs - counts.succeeded - counts.failed,
      queueWaitP50Ms: percentile(waits, 50),
      queueWaitP95Ms: percentile(waits, 95),
      runnerLifecycleP50Ms: percentile(observer.lifecycles, 50),
      runnerLifecycleP95Ms: percentile(observer.lifecycles, 95),
      runnersSeen: observer.created.size,
      kubeWrites: observer.kubeWriteCount,
      actionsCalls: observer.actionsCalls(),
      registrationsLeft: sim.registrations().length,
      leakAudit,
      podsLeft: left.pods.length,
      secretsLeft: left.secrets.length,
      podsAndSecretsLeft: [...left.pods, ...left.secrets],
      chartObjectsLeft: chartLeft,
      identities,
      refusals: [...new Set(refusals)],
      processesLeft: 0,
      tempFoldersLeft: 0,
      chaos,
      aborted: io.signal.aborted,
      pids,
      folders,
    };
    for (const err of [...runnerPlayer.errors, ...listenerPlayer.errors].slice(-5)) {
      view.event(`  player: ${err}`);
    }
    pids.push(
      ...controllers.pids(),
      ...[...listenerPlayer.played.values()].map((l) => l.process.pid),
      ...(sharedListeners?.pids() ?? []),
    );
  } finally {
    view.release();
    for (const step of cleanup.reverse()) {
      await step().catch((err: Error) => io.out.write(`cleanup: ${err.message}\n`));
    }
    await plane?.stop();
  }
  if (!report) throw new Error('the sandbox ended without a report');
  // A control-plane process restarted by a fault has a pid of its own, which must be gone too.
  for (const pid of plane?.pidsEver ?? []) if (!pids.includes(pid)) pids.push(pid);
  report.processesLeft = pids.filter((pid) => processExists(pid)).length;
  report.tempFoldersLeft = folders.filter((f) => existsSync(f)).length;
  report.wallMs = report.wallMs || Date.now() - began;
  return report;
}

function restoreEnv(before: { kubeconfig?: string; controlPlane?: string }): void {
  const put = (key: string, value: string | undefined): void => {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  };
  put('ARO_TEST_KUBECONFIG', before.kubeconfig);
  put('ARO_TEST_CONTROL_PLANE', before.controlPlane);
}
