/**
 * A fleet of scale sets, controller and listeners together, measured as production runs them: the
 * compiled apps (`npm run build`) started through the image's entrypoints (`image/bin/aro-controller`,
 * `image/bin/aro-listener`, their Node flags included) against a real kube-apiserver + etcd (with an
 * audit log) and the Actions simulator. For each mode and each N it starts a fresh control plane,
 * simulator and controller, creates N AutoscalingRunnerSets, runs the listeners as the mode deploys
 * them (`per-pod`: a process for each listener pod the controller makes, as its kubelet would;
 * `shared`: one replica of the shared listener Deployment, `LISTENER_MODE=shared`, reading the configs
 * Secret the controller writes), plays every runner pod (`test/harness/runner-player.ts`: Running,
 * takes its job on the service, exits 0), and queues a burst of jobs on every scale set at once.
 *
 *   npm run bench -- --scale-sets 1,5,20 [--jobs 10] [--max-runners N] [--job-duration-ms 2000] [--mode per-pod|shared|both]
 *
 * Printed per run: the total RSS of the controller and listener processes at idle (every session open,
 * 3 s settled) and at peak (each process's VmHWM, start-up included), the peak of each part, the
 * marginal peak per added scale set against the smallest N of the same mode, the job wait (queued ->
 * runner assigned, from the simulator) p50/p95, the makespan, the product's Actions calls per job
 * (token exchanges excluded; the runners' own calls are the player's, in-process, not counted) and its
 * Kubernetes requests per job (controller and listeners, watches excluded, from the audit log by user,
 * once every runner of the burst is gone),
 * and the load average before and after (the machine is shared: latencies move with it, memory and
 * counts do not). It asserts nothing. One replica of each Deployment: the chart's standbys (a second
 * controller, a second shared listener) hold no work and add their idle RSS.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { V1Namespace, V1Secret } from '@kubernetes/client-node';
import {
  Annotations,
  AutoscalingRunnerSetKind,
  EphemeralRunnerKind,
  type AutoscalingRunnerSet,
  type EphemeralRunner,
} from '@aro/api';
import { KubeClient, NamespaceKind, SecretKind } from '@aro/kube';
import { DEFAULT_PAT, startSimulator } from '../apps/simulator/src';
import {
  ControlPlane,
  auditedRequestsUpToNow,
  freePort,
  kubeConfigForUser,
  percentile,
  processCpuSeconds,
  processMemory,
  waitFor,
} from '../test/harness';
import { CRD_PATHS } from '../test/harness/global-setup';
import { ListenerPlayer } from '../test/harness/listener-player';
import { RunnerPlayer } from '../test/harness/runner-player';
import { SharedListenerReplicas } from '../test/harness/shared-listener-replicas';

const root = resolve(__dirname, '..');
const controllerEntrypoint = join(root, 'image/bin/aro-controller');
const listenerEntrypoint = join(root, 'image/bin/aro-listener');
const CONTROLLER_USER = 'aro-controller';
const LISTENER_USER = 'aro-listener';
const SYSTEM_NAMESPACE = 'aro-system';
const RUNNER_NAMESPACE = 'runners';
/** The chart's names for release `aro` (charts/aro-controller/templates/_helpers.tpl). */
const SHARED_LISTENER = 'aro-gha-rs-controller-shared-listener';
const SHARED_CONFIGS = `${SHARED_LISTENER}-configs`;

type Mode = 'per-pod' | 'shared';

interface Args {
  scaleSets: number[];
  modes: Mode[];
  jobs: number;
  /** maxRunners of each set; the burst's size (every job at once) when not given. */
  maxRunners?: number;
  jobDurationMs: number;
}

function parseArgs(argv: string[]): Args {
  const args: Args = { scaleSets: [1, 5, 20], modes: ['shared', 'per-pod'], jobs: 10, jobDurationMs: 2_000 };
  for (let i = 0; i < argv.length; i += 2) {
    const value = argv[i + 1] ?? '';
    if (argv[i] === '--scale-sets')
      args.scaleSets = value
        .split(',')
        .map(Number)
        .filter((n) => n > 0);
    else if (argv[i] === '--jobs') args.jobs = Number(value);
    else if (argv[i] === '--job-duration-ms') args.jobDurationMs = Number(value);
    else if (argv[i] === '--max-runners') args.maxRunners = Number(value);
    else if (argv[i] === '--mode') {
      if (value !== 'both' && value !== 'per-pod' && value !== 'shared')
        throw new Error(`--mode ${value}: per-pod, shared or both`);
      args.modes = value === 'both' ? ['shared', 'per-pod'] : [value];
    } else
      throw new Error(`unknown argument ${argv[i]}; see the comment at the top of bench/scale-set-fleet.ts`);
  }
  return args;
}

const sumCpu = (pids: number[]): number => pids.reduce((sum, pid) => sum + processCpuSeconds(pid), 0);

const sumMiB = (pids: number[], of: 'rssKiB' | 'hwmKiB'): number =>
  pids.reduce((sum, pid) => sum + processMemory(pid)[of], 0) / 1024;

async function startController(kubeconfigPath: string, env: Record<string, string>): Promise<ChildProcess> {
  const port = await freePort();
  const child = spawn('sh', [controllerEntrypoint], {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      ARO_HOME: root,
      KUBECONFIG: kubeconfigPath,
      POD_NAMESPACE: SYSTEM_NAMESPACE,
      LEADER_ELECTION: 'false',
      PROBE_PORT: String(port),
      PROBE_BIND_ADDRESS: '127.0.0.1',
      LOG_LEVEL: 'warn',
      // The image listener pods name; the benchmark runs the listener entrypoint whatever it says.
      CONTROLLER_MANAGER_CONTAINER_IMAGE: 'aro:bench',
      ...env,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  await waitFor(
    async () => {
      if (child.exitCode !== null) throw new Error(`the controller exited with ${child.exitCode}`);
      return (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.ok;
    },
    { description: 'the controller ready', timeoutMs: 120_000, intervalMs: 50 },
  );
  return child;
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((done) => child.once('exit', done));
  child.kill('SIGTERM');
  await exited;
}

export interface FleetRow {
  mode: Mode;
  scaleSets: number;
  processes: number;
  jobs: number;
  loadBefore: number;
  loadAfter: number;
  idleTotalMiB: number;
  peakTotalMiB: number;
  controllerPeakMiB: number;
  listenersPeakMiB: number;
  waitP50Ms: number;
  waitP95Ms: number;
  makespanS: number;
  /** CPU seconds from the burst's start until every runner was gone. */
  controllerCpuS: number;
  listenersCpuS: number;
  actionsCallsPerJob: number;
  kubeRequestsPerJob: number;
  kubeWritesPerJob: number;
  /** Kubernetes requests per job by `<controller|listener> <verb> <resource>`. */
  requestsPerJob: Record<string, number>;
}

async function runOnce(mode: Mode, n: number, args: Args): Promise<FleetRow> {
  const loadBefore = loadavg()[0];
  const cp = await ControlPlane.start({
    crdPaths: CRD_PATHS,
    withoutControllerManager: true,
    auditLog: true,
    log: () => undefined,
  });
  process.env.ARO_TEST_CONTROL_PLANE = cp.infoPath;
  process.env.ARO_TEST_KUBECONFIG = cp.info.kubeconfigPath;
  const sim = await startSimulator({
    seed: { timing: { longPollTimeoutMs: 5_000, autoStartJobs: true, sessionIdleTimeoutMs: 30_000 } },
  });
  const dir = mkdtempSync(join(tmpdir(), 'aro-bench-fleet-'));
  const admin = new KubeClient(cp.kubeConfig());
  const stops: Array<() => Promise<unknown>> = [];
  try {
    const kubeconfigOf = async (user: string): Promise<string> => {
      const path = join(dir, `${user}.kubeconfig`);
      writeFileSync(path, (await kubeConfigForUser(user, ['system:masters'])).exportConfig());
      return path;
    };
    const [controllerKubeconfig, listenerKubeconfig] = [
      await kubeconfigOf(CONTROLLER_USER),
      await kubeconfigOf(LISTENER_USER),
    ];
    for (const name of [SYSTEM_NAMESPACE, RUNNER_NAMESPACE])
      await admin.create<V1Namespace>(NamespaceKind, { metadata: { name } });
    await admin.create<V1Secret>(SecretKind, {
      metadata: { name: 'gh', namespace: RUNNER_NAMESPACE },
      stringData: { github_token: DEFAULT_PAT },
    });

    const controller = await startController(
      controllerKubeconfig,
      mode === 'shared'
        ? {
            LISTENER_MODE: 'shared',
            LISTENER_SHARED_SERVICE_ACCOUNT: SHARED_LISTENER,
            LISTENER_SHARED_CONFIG_SECRET: SHARED_CONFIGS,
          }
        : {},
    );
    stops.push(() => stopChild(controller));
    const listenerProcess = () => ({ command: 'sh', args: [listenerEntrypoint], env: { ARO_HOME: root } });
    let listenerPids: () => number[];
    if (mode === 'shared') {
      const shared = await new SharedListenerReplicas({
        // The chart's container env (templates/shared-listener.yaml) for release `aro`.
        container: {
          name: 'listener',
          env: [
            { name: 'LISTENER_MODE', value: 'shared' },
            { name: 'LISTENER_CONFIG_SECRET', value: `${SYSTEM_NAMESPACE}/${SHARED_CONFIGS}` },
            { name: 'LISTENER_RESCAN_SECONDS', value: '10' },
            { name: 'LOG_LEVEL', value: 'warn' },
            { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
          ],
        },
        kubeconfigPath: listenerKubeconfig,
        replicas: 1,
        prefix: SHARED_LISTENER,
        logDir: dir,
        processFor: listenerProcess,
      }).start();
      stops.push(() => shared.stop());
      listenerPids = () => shared.pids();
    } else {
      const pods = ListenerPlayer.start({
        namespace: SYSTEM_NAMESPACE,
        kubeconfigFor: () => listenerKubeconfig,
        processFor: listenerProcess,
      });
      stops.push(() => pods.stop());
      listenerPids = () => pods.running().map((l) => l.pid);
    }
    const runners = new RunnerPlayer({
      kubeConfig: cp.kubeConfig(),
      namespace: RUNNER_NAMESPACE,
      service: sim,
      jobDurationMs: args.jobDurationMs,
      // An idle runner leaves only when the listener scales it down, as a real one waits for work.
      jobWaitTimeoutMs: 600_000,
    }).start();
    stops.push(() => runners.stop());

    for (let i = 0; i < n; i++) {
      await admin.create<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, {
        metadata: { name: `set-${i}`, namespace: RUNNER_NAMESPACE },
        spec: {
          githubConfigUrl: sim.configUrl({ org: 'octo' }),
          githubConfigSecret: 'gh',
          minRunners: 0,
          maxRunners: args.maxRunners ?? args.jobs,
          template: {
            spec: { containers: [{ name: 'runner', image: 'ghcr.io/actions/actions-runner:latest' }] },
          },
        },
      });
    }
    const scaleSetIds = await waitFor(
      async () => {
        const sets = await admin.list<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, {
          namespace: RUNNER_NAMESPACE,
        });
        const ids = sets.map((s) => Number(s.metadata?.annotations?.[Annotations.runnerScaleSetId] ?? 0));
        return ids.length === n && ids.every((id) => id > 0) ? ids : undefined;
      },
      { description: `${n} scale sets registered`, timeoutMs: 300_000, intervalMs: 500 },
    );
    await waitFor(() => scaleSetIds.every((id) => sim.sessions().some((s) => s.scaleSetId === id)), {
      description: 'every scale set served (its message session open)',
      // Twenty listener processes starting at once on a busy 2-core machine take minutes.
      timeoutMs: 120_000 + 15_000 * n,
      intervalMs: 500,
    });
    await new Promise((r) => setTimeout(r, 3_000));
    const pids = () => [controller.pid ?? 0, ...listenerPids()];
    const idleTotalMiB = sumMiB(pids(), 'rssKiB');

    const auditBefore = (await auditedRequestsUpToNow(admin, RUNNER_NAMESPACE, cp.info.auditLogPath!)).length;
    sim.resetCallCounts();
    const cpuBefore = { controller: sumCpu([controller.pid ?? 0]), listeners: sumCpu(listenerPids()) };
    const queued = new Set<string>();
    for (const scaleSetId of scaleSetIds) {
      for (let j = 0; j < args.jobs; j++) queued.add(sim.enqueueJob({ scaleSetId }).jobId);
    }
    const started = Date.now();
    await waitFor(
      () => sim.jobs().filter((j) => queued.has(j.jobId) && j.state === 'completed').length === queued.size,
      {
        description: `${queued.size} jobs completed`,
        timeoutMs: 1_800_000,
        intervalMs: 250,
      },
    );
    const makespanS = (Date.now() - started) / 1000;
    // The requests of the whole burst: every runner's lifecycle ends (its deletion and cleanup) after its
    // job does, and a controller behind would otherwise look cheaper than one keeping up.
    await waitFor(
      async () =>
        (await admin.list<EphemeralRunner>(EphemeralRunnerKind, { namespace: RUNNER_NAMESPACE })).length ===
        0,
      { description: 'every runner gone after the burst', timeoutMs: 600_000, intervalMs: 500 },
    );
    const peakPids = pids();
    // CPU the burst took: one shared process gets one thread's share of a loaded machine, a process
    // per set one share each, so where a mode's job wait goes is told apart from how much work it is.
    const controllerCpuS = sumCpu([controller.pid ?? 0]) - cpuBefore.controller;
    const listenersCpuS = sumCpu(listenerPids()) - cpuBefore.listeners;
    const controllerPeakMiB = processMemory(controller.pid ?? 0).hwmKiB / 1024;
    const listenersPeakMiB = sumMiB(listenerPids(), 'hwmKiB');
    const actionsCalls = Object.entries(sim.callCounts())
      .filter(([route]) => !/registration-token|runner-registration|access_tokens|<unmatched>/.test(route))
      .reduce((sum, [, count]) => sum + count, 0);
    const requests = (await auditedRequestsUpToNow(admin, RUNNER_NAMESPACE, cp.info.auditLogPath!))
      .slice(auditBefore)
      .filter((r) => (r.user === CONTROLLER_USER || r.user === LISTENER_USER) && r.verb !== 'watch');
    const writes = requests.filter((r) => ['create', 'update', 'patch', 'delete'].includes(r.verb));
    // Where the requests go, per job, for the run's line on stderr: what a difference between modes is.
    const byRequest = new Map<string, number>();
    for (const r of requests) {
      const what = `${r.user === CONTROLLER_USER ? 'controller' : 'listener'} ${r.verb} ${r.resource}`;
      byRequest.set(what, (byRequest.get(what) ?? 0) + 1);
    }
    const waits = sim
      .jobs()
      .filter((j) => queued.has(j.jobId))
      .map((j) => Date.parse(j.runnerAssignTime) - Date.parse(j.queueTime))
      .sort((a, b) => a - b);
    return {
      mode,
      scaleSets: n,
      processes: peakPids.length,
      jobs: queued.size,
      loadBefore,
      loadAfter: loadavg()[0],
      idleTotalMiB,
      peakTotalMiB: controllerPeakMiB + listenersPeakMiB,
      controllerPeakMiB,
      listenersPeakMiB,
      waitP50Ms: percentile(waits, 50),
      waitP95Ms: percentile(waits, 95),
      makespanS,
      controllerCpuS,
      listenersCpuS,
      actionsCallsPerJob: actionsCalls / queued.size,
      kubeRequestsPerJob: requests.length / queued.size,
      kubeWritesPerJob: writes.length / queued.size,
      requestsPerJob: Object.fromEntries(
        [...byRequest]
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([what, count]) => [what, Number((count / queued.size).toFixed(2))]),
      ),
    };
  } finally {
    for (const stop of stops.reverse()) await stop().catch((err: unknown) => console.error(err));
    admin.close();
    await sim.stop();
    await cp.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

function table(rows: FleetRow[]): string {
  const lines = [
    '| mode | scale sets | processes | jobs | load avg before / after | RSS idle total (MiB) | peak total (MiB) | controller / listeners peak (MiB) | marginal per added set, peak (MiB) | job wait p50 / p95 (s) | makespan (s) | CPU controller / listeners (s) | Actions calls / job | Kubernetes requests / job (writes) |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    // Against the smallest size measured in the same mode: what each added scale set costs.
    const base = rows
      .filter((o) => o.mode === r.mode && o.scaleSets < r.scaleSets)
      .sort((a, b) => a.scaleSets - b.scaleSets)[0];
    const marginal = base
      ? ((r.peakTotalMiB - base.peakTotalMiB) / (r.scaleSets - base.scaleSets)).toFixed(1)
      : '-';
    lines.push(
      `| ${r.mode} | ${r.scaleSets} | ${r.processes} | ${r.jobs} | ${r.loadBefore.toFixed(1)} / ${r.loadAfter.toFixed(1)} | ${r.idleTotalMiB.toFixed(0)} | ${r.peakTotalMiB.toFixed(0)} | ${r.controllerPeakMiB.toFixed(0)} / ${r.listenersPeakMiB.toFixed(0)} | ${marginal} | ${(r.waitP50Ms / 1000).toFixed(1)} / ${(r.waitP95Ms / 1000).toFixed(1)} | ${r.makespanS.toFixed(1)} | ${r.controllerCpuS.toFixed(1)} / ${r.listenersCpuS.toFixed(1)} | ${r.actionsCallsPerJob.toFixed(2)} | ${r.kubeRequestsPerJob.toFixed(1)} (${r.kubeWritesPerJob.toFixed(1)}) |`,
    );
  }
  return lines.join('\n');
}

/** Runs the fleet benchmark with `argv` (`npm run bench -- --scale-sets ...`, see fleet.ts). */
export async function runScaleSetFleetBench(argv: string[]): Promise<void> {
  const args = parseArgs(argv);
  for (const main of ['controller', 'listener']) {
    const path = join(root, `dist/apps/${main}/apps/${main}/src/main.js`);
    if (!existsSync(path))
      throw new Error(`${path} is missing: run \`npm run build\` first (\`npm run bench\` does)`);
  }
  const rows: FleetRow[] = [];
  for (const mode of args.modes) {
    for (const n of args.scaleSets) {
      process.stderr.write(`[bench] ${mode}, ${n} scale sets, ${args.jobs} jobs each...\n`);
      const row = await runOnce(mode, n, args);
      rows.push(row);
      process.stderr.write(`[bench] ${JSON.stringify(row)}\n`);
    }
  }
  // The entrypoints run the `node` first on PATH (under `npm run`, the pinned one in node_modules/.bin).
  const node = execFileSync('node', ['--version'], { encoding: 'utf8' }).trim();
  console.log(`\nThe apps on Node ${node}; load average (1 min) before and after each run.\n`);
  console.log(table(rows));
}

if (require.main === module) {
  runScaleSetFleetBench(process.argv.slice(2)).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
