import { createWriteStream, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Namespace } from '@kubernetes/client-node';
import { KubeClient, NamespaceKind } from '@aro/kube';
import { createLogger } from '@aro/observability';
import { DEFAULT_PAT, startSimulator, type RunningSimulator } from '../../apps/simulator/src';
import { ControlPlane } from '../harness/control-plane';
import { CRD_PATHS } from '../harness/global-setup';
import { ListenerPodPlayer } from '../harness/listener-pod-player';
import { processExists } from '../harness/processes';
import { RunnerPlayer } from '../harness/runner-player';
import { freePort } from '../harness/ports';
import { LISTENER_MAIN } from './apps';
import {
  CONTROLLER_NAMESPACE,
  CONTROLLER_RELEASE,
  RUNNER_NAMESPACE,
  SCALE_SET_RELEASE,
  applyManifests,
  ensureHelm,
  identityOf,
  renderControllerChart,
  renderScaleSetChart,
  writeServiceAccountKubeconfig,
} from './charts';
import { ControllerReplicas } from './controllers';
import type { SandboxOptions } from './options';
import { ProgressView, jobCounts, type Snapshot } from './progress';
import { keepInstructions, type Identity, type SandboxReport } from './report';
import { drainScaleSet } from './drain';
import { forbiddenLines, podsIn, secretsIn } from './observe';
import { percentile } from './stats';
import { Workload } from './workload';
import { WorkloadObserver } from './workload-observer';

export { renderReport, type SandboxReport } from './report';

export const SIMULATOR_PORT = 8910;

export interface SandboxIo {
  out: NodeJS.WritableStream;
  tty: boolean;
  /** Aborted by Ctrl-C: the run stops where it is, cleans up and still reports. */
  signal: AbortSignal;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * `npm run sandbox`: the whole product on this machine, on loopback. Brings up the control plane, the
 * simulator as GitHub, the controller chart (its RBAC applied, its Deployment's replicas played as
 * processes under its service account), the scale-set chart, and the kubelet players; queues the
 * workload; shows progress; then uninstalls the scale set, checks what is left, stops everything and
 * reports.
 */
export async function runSandbox(options: SandboxOptions, io: SandboxIo): Promise<SandboxReport> {
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

    // In-process: the sandbox reads the service's jobs, registrations and counters several times a
    // second for the progress view and plays every runner against it; over HTTP that would be a
    // process more to manage and a JSON round trip per look. The product reaches it over HTTP as ever.
    const simLog = createWriteStream(join(workDir, 'simulator.log'));
    // A listener killed outright (--chaos) leaves its message session open; a new one may take over
    // once the old one is idle for sessionIdleTimeoutMs. The simulator's default (120 s) would stall the
    // run for two minutes; 15 s, with long polls of 10 s so that a live listener is never idle that
    // long, shows the same handover in seconds.
    const simOptions = {
      seed: { timing: { autoStartJobs: true, sessionIdleTimeoutMs: 15_000, longPollTimeoutMs: 10_000 } },
      logger: createLogger({ level: 'info', format: 'json', destination: simLog }),
    };
    // The simulator's usual port when it is free, so that examples/manifests (which name
    // http://127.0.0.1:8910/octo) apply as they are against `npm run sandbox -- --keep`.
    const sim: RunningSimulator = await startSimulator({ ...simOptions, port: SIMULATOR_PORT }).catch(() =>
      startSimulator({ ...simOptions, port: 0 }),
    );
    cleanup.push(async () => {
      await sim.stop();
      simLog.end();
    });
    const configUrl = sim.configUrl({ org: 'octo' });
    view.event(`simulator (GitHub + Actions service) at ${sim.url}; config URL ${configUrl}`);

    // The controller chart: everything but the Deployment applied as rendered; the Deployment's pods
    // played as processes with its env, under its service account.
    const controllerChart = await renderControllerChart();
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
    view.event(`controllers up: ${controllers.replicas.map((r) => `${r.name} :${r.port}`).join(', ')}`);

    const runnerPlayer = new RunnerPlayer({
      kubeConfig: cp.kubeConfig(),
      namespace: RUNNER_NAMESPACE,
      service: sim,
      jobDurationMs: options.duration * 1_000,
      failShare: options.failShare,
      exit7Share: options.exit7Share,
      jobWaitTimeoutMs: 120_000,
    }).start();
    cleanup.push(() => runnerPlayer.stop());

    // Each listener runs as its pod's service account, with the Role the AutoscalingListener
    // controller bound to it (patch its EphemeralRunnerSet and its runners, nothing more).
    const listenerKubeconfigs = new Map<string, string>();
    const listenerPlayer = new ListenerPodPlayer({
      kubeConfig: cp.kubeConfig(),
      kubeconfigPath: cp.info.kubeconfigPath,
      kubeconfigForPod: async (pod) => {
        const namespace = pod.metadata?.namespace ?? '';
        const account = pod.spec?.serviceAccountName ?? 'default';
        const key = `${namespace}/${account}`;
        const known = listenerKubeconfigs.get(key);
        if (known) return known;
        const path = await writeServiceAccountKubeconfig(
          namespace,
          account,
          join(identityDir, `listener-${namespace}-${account}.kubeconfig`),
        );
        listenerKubeconfigs.set(key, path);
        return path;
      },
      namespace: '', // wherever the AutoscalingListener controller puts them
      listenerMain: LISTENER_MAIN,
      workDir: join(workDir, 'listeners'),
      pidFile: join(cp.info.runDir, 'pids'),
      freePort,
      log: (l) => view.event(`  ${l}`, last),
    }).start();
    cleanup.push(() => listenerPlayer.stop());

    // The scale-set chart with its defaults, given only what the sandbox must: the simulator's URL,
    // its token, the runner bounds from the flags, and the controller's service account (which
    // `helm install` would look up in the cluster and `helm template` cannot).
    const scaleSet = await renderScaleSetChart({
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
      `installed charts/aro-scale-set (release ${SCALE_SET_RELEASE} in ${RUNNER_NAMESPACE}, ` +
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
      labels: [SCALE_SET_RELEASE],
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

    let killedLeaderAt = 0;
    let listenerKilled = false;
    let leaderKilled = false;
    const deadline = workloadBegan + options.timeoutSeconds * 1_000;

    // The workload: run until every job has finished, the timeout passes, or Ctrl-C.
    while (!io.signal.aborted) {
      last = await observer.look();
      view.update(last);
      const done = last.jobs.succeeded + last.jobs.failed;
      if (workload.queuedAll && done >= options.jobs) break;
      if (Date.now() > deadline) {
        view.event(`!!! the workload did not finish within ${options.timeoutSeconds} s; stopping`, last);
        break;
      }
      if (options.chaos && !leaderKilled && done >= options.jobs / 3) {
        leaderKilled = true;
        const victim = await controllers.killLeader();
        killedLeaderAt = Date.now();
        const line = victim ? `chaos: killed the leader ${victim} (SIGKILL)` : 'chaos: no leader to kill';
        chaos.push(line);
        view.event(line, last);
      }
      if (options.chaos && !listenerKilled && done >= options.jobs / 2) {
        listenerKilled = true;
        const victim = await listenerPlayer.killOne();
        const line = victim
          ? `chaos: killed the listener ${victim.pod} (SIGKILL)`
          : 'chaos: no listener running to kill';
        chaos.push(line);
        view.event(line, last);
      }
      // A Deployment restarts a killed pod after a moment; so does the sandbox.
      if (killedLeaderAt && Date.now() - killedLeaderAt > 3_000) {
        for (const name of await controllers.restartExited()) view.event(`restarted ${name}`, last);
        killedLeaderAt = 0;
      }
      await sleep(1_000);
    }
    const workloadMs = Date.now() - workloadBegan;
    workload.stop();

    if (options.keep && !io.signal.aborted) {
      io.out.write(
        keepInstructions({
          kubeconfigPath: cp.info.kubeconfigPath,
          simUrl: sim.url,
          simulatorPort: SIMULATOR_PORT,
          controllerMetrics: controllers.replicas.map((r) => controllers.metricsUrl(r)),
          listenerMetrics: listenerPlayer.running().map((l) => l.metricsUrl),
          lease,
          workDir,
        }),
      );
      // Until Ctrl-C the players keep playing, for what a person applies or queues; then the same
      // uninstall and count as without --keep.
      while (!io.signal.aborted) await sleep(1_000);
    }

    // Drain: `helm uninstall` of the scale set; the controller releases its runners, its listener and
    // its registrations, then the chart's protected objects; whatever it leaves behind is counted.
    // Skipped after a Ctrl-C of a run without --keep: the person wants it stopped, not tidied.
    const chartLeft =
      !io.signal.aborted || options.keep
        ? await drainScaleSet({
            kube,
            kubeConfig: cp.kubeConfig(),
            scaleSet,
            tick: async () => {
              last = await observer.look();
              view.update(last);
            },
            event: (line) => view.event(line, last),
          })
        : [];
    view.release();
    const pods = await podsIn(kube);
    const secrets = await secretsIn(kube);
    const jobs = sim.jobs().filter((j) => workload.jobIds.includes(j.jobId));
    const waits = jobs
      .filter((j) => !j.runnerAssignTime.startsWith('0001'))
      .map((j) => Date.parse(j.runnerAssignTime) - Date.parse(j.queueTime));
    const counts = jobCounts(jobs);
    // Read before the players remove their folders: any RBAC refusal the product met on the way.
    const logs = [
      ...controllers.replicas.map((r) => r.process.logFile),
      ...[...listenerPlayer.played.values()].map((l) => l.process.logFile),
    ];
    const refusals = logs.flatMap(forbiddenLines);
    const identities: Identity[] = [
      { who: 'controller' as const, ...(await identityOf(controllerKubeconfig)) },
      ...(await Promise.all(
        [...listenerKubeconfigs.values()].map(async (path) => ({
          who: 'listener' as const,
          ...(await identityOf(path)),
        })),
      )),
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
      podsLeft: pods.length,
      secretsLeft: secrets.length,
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
    pids.push(...controllers.pids(), ...[...listenerPlayer.played.values()].map((l) => l.process.pid));
  } finally {
    view.release();
    for (const step of cleanup.reverse()) {
      await step().catch((err: Error) => io.out.write(`cleanup: ${err.message}\n`));
    }
    await plane?.stop();
  }
  if (!report) throw new Error('the sandbox ended without a report');
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
