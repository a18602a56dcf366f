/**
 * Warm headroom, off and on, under a ramp of bursts: the controller (in-process) and the listener
 * process (from source) against a real kube-apiserver + etcd and the Actions simulator, runner pods
 * played with a start time (test/harness/runner-player.ts `startDelayMs`: what a warm runner saves).
 * For each mode a scale set of its own (minRunners 0) gets bursts of 1, 2, ... jobs, one every
 * `--gap-s`; then the benchmark waits for the set to be back at 0 runners (with headroom: once no job
 * arrived for the window).
 *
 *   npm run bench:headroom -- [--bursts 1,2,3,4,5,6] [--gap-s 10] [--start-s 10] [--job-s 3]
 *                              [--window-s 40] [--cap 10] [--max-runners 30]
 *
 * Printed per mode: the jobs' queue wait (queued -> runner assigned, from the simulator) p50/p95/max
 * and mean, the share of jobs that waited less than half a start time (started warm), and the idle
 * runner-seconds (runners of the set, started or starting, without a job: sampled every 250 ms from
 * the apiserver and the simulator, from the first burst until the set is back at 0). It asserts nothing.
 */
import { loadavg } from 'node:os';
import type { V1Namespace, V1Secret } from '@kubernetes/client-node';
import {
  Annotations,
  AutoscalingRunnerSetKind,
  EphemeralRunnerKind,
  WarmHeadroomAnnotations,
  type AutoscalingRunnerSet,
  type EphemeralRunner,
} from '@aro/api';
import { KubeClient, NamespaceKind, SecretKind } from '@aro/kube';
import { createLogger } from '@aro/observability';
import { DEFAULT_PAT, startSimulator, type RunningSimulator } from '../apps/simulator/src';
import { loadControllerConfig } from '../apps/controller/src/config';
import { startControllerApp } from '../apps/controller/src/bootstrap';
import { ControlPlane, percentile, waitFor } from '../test/harness';
import { CRD_PATHS } from '../test/harness/global-setup';
import { ListenerPlayer } from '../test/harness/listener-player';
import { RunnerPlayer } from '../test/harness/runner-player';

const SYSTEM_NAMESPACE = 'aro-system';
const RUNNER_NAMESPACE = 'runners';

interface Args {
  bursts: number[];
  gapS: number;
  startS: number;
  jobS: number;
  windowS: number;
  cap: number;
  maxRunners: number;
}

function parseArgs(argv: string[]): Args {
  const args: Args = {
    bursts: [1, 2, 3, 4, 5, 6],
    gapS: 10,
    startS: 10,
    jobS: 3,
    windowS: 40,
    cap: 10,
    maxRunners: 30,
  };
  const numbers: Record<string, keyof Omit<Args, 'bursts'>> = {
    '--gap-s': 'gapS',
    '--start-s': 'startS',
    '--job-s': 'jobS',
    '--window-s': 'windowS',
    '--cap': 'cap',
    '--max-runners': 'maxRunners',
  };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value = ''] = [argv[i], argv[i + 1]];
    if (flag === '--bursts')
      args.bursts = value
        .split(',')
        .map(Number)
        .filter((n) => n > 0);
    else if (flag in numbers) args[numbers[flag]] = Number(value);
    else throw new Error(`unknown argument ${flag}; see the comment at the top of bench/headroom.ts`);
  }
  return args;
}

interface Row {
  mode: 'off' | 'on';
  jobs: number;
  waitP50S: number;
  waitP95S: number;
  waitMaxS: number;
  waitMeanS: number;
  warmShare: number;
  idleRunnerSeconds: number;
  mostRunners: number;
  loadAfter: number;
}

async function createSet(
  admin: KubeClient,
  sim: RunningSimulator,
  name: string,
  args: Args,
  annotations?: Record<string, string>,
): Promise<number> {
  await admin.create<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, {
    metadata: { name, namespace: RUNNER_NAMESPACE, annotations },
    spec: {
      githubConfigUrl: sim.configUrl({ org: 'octo' }),
      githubConfigSecret: 'gh',
      minRunners: 0,
      maxRunners: args.maxRunners,
      template: {
        spec: { containers: [{ name: 'runner', image: 'ghcr.io/actions/actions-runner:latest' }] },
      },
    },
  });
  const id = await waitFor(
    async () => {
      const ars = await admin.get<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, RUNNER_NAMESPACE, name);
      const value = Number(ars.metadata?.annotations?.[Annotations.runnerScaleSetId] ?? 0);
      return value > 0 ? value : undefined;
    },
    { description: `${name} registered`, timeoutMs: 120_000, intervalMs: 250 },
  );
  await waitFor(() => sim.sessions().some((s) => s.scaleSetId === id), {
    description: `${name}'s listener session`,
    timeoutMs: 180_000,
    intervalMs: 250,
  });
  return id;
}

async function runMode(
  mode: 'off' | 'on',
  admin: KubeClient,
  sim: RunningSimulator,
  args: Args,
): Promise<Row> {
  const name = `headroom-${mode}`;
  const scaleSetId = await createSet(
    admin,
    sim,
    name,
    args,
    mode === 'on'
      ? {
          [WarmHeadroomAnnotations.maxRunners]: String(args.cap),
          [WarmHeadroomAnnotations.windowSeconds]: String(args.windowS),
        }
      : undefined,
  );
  // Settle: the first patch (replicas 0) written, nothing in flight.
  await new Promise((r) => setTimeout(r, 3_000));
  const runnersOfSet = async (): Promise<EphemeralRunner[]> =>
    (await admin.list<EphemeralRunner>(EphemeralRunnerKind, { namespace: RUNNER_NAMESPACE })).filter(
      (r) => r.spec.runnerScaleSetId === scaleSetId,
    );
  let idleRunnerSeconds = 0;
  let mostRunners = 0;
  let sampling = true;
  let last = Date.now();
  const sampler = (async () => {
    while (sampling) {
      const runners = await runnersOfSet();
      const now = Date.now();
      // A runner without a job on the service: starting, or up and waiting. Both are paid for.
      const idle = runners.filter(
        (r) => !r.metadata?.deletionTimestamp && !sim.runner(r.metadata?.name ?? '')?.jobId,
      ).length;
      idleRunnerSeconds += (idle * (now - last)) / 1000;
      mostRunners = Math.max(mostRunners, runners.length);
      last = now;
      await new Promise((r) => setTimeout(r, 250));
    }
  })();
  const jobs: string[] = [];
  for (const [i, size] of args.bursts.entries()) {
    if (i > 0) await new Promise((r) => setTimeout(r, args.gapS * 1000));
    for (let j = 0; j < size; j++) jobs.push(sim.enqueueJob({ scaleSetId }).jobId);
    process.stderr.write(`[bench] headroom ${mode}: burst ${i + 1} of ${size} jobs\n`);
  }
  await waitFor(() => jobs.every((j) => sim.job(j)?.state === 'completed'), {
    description: `${mode}: ${jobs.length} jobs completed`,
    timeoutMs: 600_000,
    intervalMs: 250,
  });
  await waitFor(async () => (await runnersOfSet()).length === 0, {
    description: `${mode}: the set back at 0 runners`,
    timeoutMs: 120_000 + args.windowS * 1000,
    intervalMs: 250,
  });
  sampling = false;
  await sampler;
  const waits = jobs
    .map((j) => sim.job(j)!)
    .map((j) => Date.parse(j.runnerAssignTime) - Date.parse(j.queueTime))
    .sort((a, b) => a - b);
  return {
    mode,
    jobs: jobs.length,
    waitP50S: percentile(waits, 50) / 1000,
    waitP95S: percentile(waits, 95) / 1000,
    waitMaxS: (waits[waits.length - 1] ?? 0) / 1000,
    waitMeanS: waits.reduce((a, b) => a + b, 0) / Math.max(1, waits.length) / 1000,
    warmShare: waits.filter((w) => w < (args.startS * 1000) / 2).length / Math.max(1, waits.length),
    idleRunnerSeconds,
    mostRunners,
    loadAfter: loadavg()[0],
  };
}

/**
 * Runs the headroom benchmark with `argv`: `npm run bench:headroom -- ...` (from source: what is measured
 * is the scaling, not the compiled apps' memory), or `npm run bench -- --headroom ...` (builds first).
 */
export async function runHeadroomBench(argv: string[]): Promise<void> {
  const args = parseArgs(argv);
  const loadBefore = loadavg()[0];
  const cp = await ControlPlane.start({
    crdPaths: CRD_PATHS,
    withoutControllerManager: true,
    log: () => undefined,
  });
  process.env.ARO_TEST_CONTROL_PLANE = cp.infoPath;
  process.env.ARO_TEST_KUBECONFIG = cp.info.kubeconfigPath;
  const sim = await startSimulator({
    seed: { timing: { longPollTimeoutMs: 5_000, autoStartJobs: true, sessionIdleTimeoutMs: 30_000 } },
  });
  const admin = new KubeClient(cp.kubeConfig());
  const stops: Array<() => Promise<unknown>> = [];
  const rows: Row[] = [];
  try {
    for (const name of [SYSTEM_NAMESPACE, RUNNER_NAMESPACE])
      await admin.create<V1Namespace>(NamespaceKind, { metadata: { name } });
    await admin.create<V1Secret>(SecretKind, {
      metadata: { name: 'gh', namespace: RUNNER_NAMESPACE },
      stringData: { github_token: DEFAULT_PAT },
    });
    const { app } = await startControllerApp({
      config: loadControllerConfig({
        PROBE_PORT: '0',
        PROBE_BIND_ADDRESS: '127.0.0.1',
        WATCH_NAMESPACE: RUNNER_NAMESPACE,
        LEADER_ELECTION: 'false',
        POD_NAMESPACE: SYSTEM_NAMESPACE,
        CONTROLLER_MANAGER_CONTAINER_IMAGE: 'aro:bench',
      }),
      logger: createLogger({ level: 'error' }),
      kubeConfig: cp.kubeConfig(),
      onLeadershipLost: () => undefined,
    });
    stops.push(() => app.close());
    const listeners = ListenerPlayer.start({ namespace: SYSTEM_NAMESPACE });
    stops.push(() => listeners.stop());
    const runners = new RunnerPlayer({
      kubeConfig: cp.kubeConfig(),
      namespace: RUNNER_NAMESPACE,
      service: sim,
      startDelayMs: args.startS * 1000,
      jobDurationMs: args.jobS * 1000,
      // An idle runner leaves only when the listener scales it down, as a real one waits for work.
      jobWaitTimeoutMs: 3_600_000,
    }).start();
    stops.push(() => runners.stop());
    for (const mode of ['off', 'on'] as const) {
      const row = await runMode(mode, admin, sim, args);
      rows.push(row);
      process.stderr.write(`[bench] ${JSON.stringify(row)}\n`);
    }
  } finally {
    for (const stop of stops.reverse()) await stop().catch((err: unknown) => console.error(err));
    admin.close();
    await sim.stop();
    await cp.stop();
  }
  console.log(
    `\nBursts of ${args.bursts.join(', ')} jobs, one every ${args.gapS} s; runners start in ${args.startS} s, ` +
      `jobs run ${args.jobS} s; headroom window ${args.windowS} s, cap ${args.cap}; load average ${loadBefore.toFixed(1)} before.\n`,
  );
  console.log(
    '| headroom | jobs | queue wait p50 / p95 / max (s) | mean (s) | started warm | idle runner-seconds | most runners | load after |',
  );
  console.log('|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(
      `| ${r.mode} | ${r.jobs} | ${r.waitP50S.toFixed(1)} / ${r.waitP95S.toFixed(1)} / ${r.waitMaxS.toFixed(1)} | ${r.waitMeanS.toFixed(1)} | ${Math.round(r.warmShare * 100)} % | ${r.idleRunnerSeconds.toFixed(0)} | ${r.mostRunners} | ${r.loadAfter.toFixed(1)} |`,
    );
  }
}

if (require.main === module) {
  runHeadroomBench(process.argv.slice(2)).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
