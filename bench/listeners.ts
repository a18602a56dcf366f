/**
 * The listener's memory, measured as production runs it: the compiled app (`npm run build`) started
 * through the image's entrypoint (`image/bin/aro-listener`, its Node flags included) against the
 * Actions simulator. For N scale sets it starts one listener process per scale set and pushes a burst
 * of jobs through each, playing the EphemeralRunnerSet controller (runners registered and connected as
 * the listener's patches ask) on a stub apiserver that answers the listener's merge patches over TLS,
 * as a real apiserver does (the listener only ever patches: no reads, lists or watches). It prints each
 * process's RSS at idle and at peak (VmHWM from /proc), the total, the marginal cost per added scale
 * set, the time from the process's start to its session being open (what its readiness probe waits
 * for), the job wait (queued -> started) and the listeners' Actions calls and Kubernetes patches per
 * job, and a listener pod's peak RSS and ready time against their goals; it asserts nothing. The
 * controller is not in these figures: its memory does not depend on the listener mode (the runner
 * benchmark above measures it), so the fleet's total is the controller's peak plus these.
 *
 *   npm run bench -- --listeners-only --scale-sets 1,5,20 [--jobs 50] [--mode per-pod|shared|both] [--aro-home DIR]
 *   (or, once built: node -r @swc-node/register bench/listeners.ts --scale-sets ...)
 *
 * `per-pod` runs one process per scale set (the default deployment); `shared` one process for all of
 * them (LISTENER_MODE=shared, every config in one directory). `--aro-home` runs the entrypoint and the
 * compiled app of another checkout (its `image/bin/aro-listener` and `dist/`), to compare two builds on
 * the same machine.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { ListenerConfig } from '@aro/api';
import { MultiClient } from '@aro/actions';
import { DEFAULT_PAT, startSimulator, type RunningSimulator } from '../apps/simulator/src';
import { createCertificateAuthority, issueServingCertificate } from '../test/harness/pki';
import { processCpuSeconds, processMemory } from '../test/harness/process-sampler';
import { percentile } from '../test/harness/stats';

const root = resolve(__dirname, '..');

/** A listener pod's goals (issue: lighter than upstream): upstream's ghalistener peaks at ~30 MiB. */
const GOAL_PEAK_MIB = 60;
const GOAL_READY_MS = 600;

type Mode = 'per-pod' | 'shared';

interface Args {
  scaleSets: number[];
  modes: Mode[];
  jobs: number;
  jobDurationMs: number;
  aroHome: string;
}

function parseArgs(argv: string[]): Args {
  const args: Args = {
    scaleSets: [1],
    modes: ['per-pod', 'shared'],
    jobs: 50,
    jobDurationMs: 2_000,
    aroHome: root,
  };
  for (let i = 0; i < argv.length; i++) {
    const value = argv[i + 1] ?? '';
    if (argv[i] === '--scale-sets')
      args.scaleSets = value
        .split(',')
        .map(Number)
        .filter((n) => n > 0);
    else if (argv[i] === '--jobs') args.jobs = Number(value);
    else if (argv[i] === '--mode') args.modes = value === 'both' ? ['per-pod', 'shared'] : [value as Mode];
    else if (argv[i] === '--job-duration-ms') args.jobDurationMs = Number(value);
    else if (argv[i] === '--aro-home') args.aroHome = resolve(value);
    else throw new Error(`unknown argument ${argv[i]}; see the comment at the top of bench/listeners.ts`);
    i++;
  }
  return args;
}

/**
 * The apiserver as the listener sees it: it answers every merge patch, over TLS with a certificate of
 * a CA of its own (a listener's TLS stack is part of what it costs), and hands each EphemeralRunnerSet
 * patch (namespace/name, replicas) to `onScale`.
 */
async function startStubApiserver(
  dir: string,
  onScale: (namespace: string, name: string, replicas: number) => void,
): Promise<{ server: Server; url: string; caFile: string; patches: () => number }> {
  let patches = 0;
  const ca = await createCertificateAuthority(dir, 'stub-ca', 'bench-stub-ca');
  const serving = await issueServingCertificate(ca, dir, 'stub-apiserver');
  const tls = { cert: await readFile(serving.certPath), key: await readFile(serving.keyPath) };
  const server = createServer(tls, (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      patches++;
      const m = /\/namespaces\/([^/]+)\/ephemeralrunnersets\/([^/?]+)/.exec(req.url ?? '');
      if (m && req.method === 'PATCH') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { spec?: { replicas?: number } };
        if (typeof body.spec?.replicas === 'number') onScale(m[1], m[2], body.spec.replicas);
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"apiVersion":"actions.github.com/v1alpha1","metadata":{}}');
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  return { server, url: `https://127.0.0.1:${port}`, caFile: ca.certPath, patches: () => patches };
}

/** The EphemeralRunnerSet controller and the runners, as far as the listener can tell. */
class RunnerPlayer {
  private readonly desired = new Map<number, number>();
  private readonly active = new Map<number, Set<string>>();
  private seq = 0;
  private readonly client;
  private busy = Promise.resolve();

  constructor(private readonly sim: RunningSimulator) {
    this.client = new MultiClient({ retry: { maxRetries: 2 } }).getClientFor({
      configUrl: sim.configUrl({ org: 'octo' }),
      namespace: 'bench',
      credentials: { kind: 'pat', token: DEFAULT_PAT },
    });
  }

  scale(scaleSetId: number, replicas: number): void {
    this.desired.set(scaleSetId, replicas);
    this.busy = this.busy.then(() => this.converge(scaleSetId)).catch(() => undefined);
  }

  /** Exits the runners whose job completed (ephemeral: one job each), then tops each set up again. */
  tick(): void {
    for (const [id, names] of this.active) {
      for (const name of names) {
        const job = this.sim.jobs({ scaleSetId: id }).find((j) => j.runnerName === name);
        if (job?.state === 'completed') {
          this.sim.runnerExited(name, 0);
          names.delete(name);
        }
      }
    }
    for (const id of this.desired.keys()) {
      this.busy = this.busy.then(() => this.converge(id)).catch(() => undefined);
    }
  }

  private async converge(scaleSetId: number): Promise<void> {
    const names = this.active.get(scaleSetId) ?? new Set<string>();
    this.active.set(scaleSetId, names);
    while (names.size < (this.desired.get(scaleSetId) ?? 0)) {
      const name = `runner-${scaleSetId}-${++this.seq}`;
      await this.client.generateJitRunnerConfig({ name, workFolder: '_work' }, scaleSetId);
      this.sim.runnerConnected(name);
      names.add(name);
    }
  }

  close(): Promise<void> {
    return this.client.close();
  }
}

interface ListenerProcess {
  child: ChildProcess;
  startedAt: number;
  idle?: number;
}

async function waitUntil(
  check: () => boolean,
  timeoutMs: number,
  what: string,
  everyMs = 100,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

async function runSize(sim: RunningSimulator, n: number, mode: Mode, args: Args, dir: string) {
  const scaleSetIds: number[] = [];
  const setup = new MultiClient({ retry: { maxRetries: 0 } }).getClientFor({
    configUrl: sim.configUrl({ org: 'octo' }),
    namespace: 'setup',
    credentials: { kind: 'pat', token: DEFAULT_PAT },
  });
  const stamp = `${process.pid}-${Date.now()}`;
  for (let i = 0; i < n; i++) {
    const set = await setup.createRunnerScaleSet({ name: `bench-${stamp}-${i}`, runnerGroupId: 1 });
    scaleSetIds.push(set.id);
  }
  await setup.close();
  const player = new RunnerPlayer(sim);
  const idByErs = new Map(scaleSetIds.map((id, i) => [`bench/ers-${i}`, id]));
  const api = await startStubApiserver(dir, (ns, name, replicas) => {
    const id = idByErs.get(`${ns}/${name}`);
    if (id !== undefined) player.scale(id, replicas);
  });
  const kubeconfigPath = join(dir, `kubeconfig-${n}.json`);
  writeFileSync(
    kubeconfigPath,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'stub', cluster: { server: api.url, 'certificate-authority': api.caFile } }],
      users: [{ name: 'listener', user: { token: 'bench' } }],
      contexts: [{ name: 'stub', context: { cluster: 'stub', user: 'listener' } }],
      'current-context': 'stub',
    }),
  );
  const configDir = mkdtempSync(join(dir, `configs-${n}-${mode}-`));
  const configPaths = scaleSetIds.map((id, i) => {
    const config: ListenerConfig = {
      configure_url: sim.configUrl({ org: 'octo' }),
      github_token: DEFAULT_PAT,
      ephemeral_runner_set_namespace: 'bench',
      ephemeral_runner_set_name: `ers-${i}`,
      min_runners: 0,
      max_runners: args.jobs,
      runner_scale_set_id: id,
      runner_scale_set_name: `bench-${stamp}-${i}`,
      metrics_addr: '127.0.0.1:0',
      log_level: 'warn',
    };
    const configPath = join(configDir, `set-${i}.json`);
    writeFileSync(configPath, JSON.stringify(config));
    return configPath;
  });
  const spawnListener = (env: NodeJS.ProcessEnv): ListenerProcess => ({
    startedAt: performance.now(),
    child: spawn('sh', [join(args.aroHome, 'image/bin/aro-listener')], {
      env: { ...process.env, ARO_HOME: args.aroHome, KUBECONFIG: kubeconfigPath, ...env },
      stdio: ['ignore', 'ignore', 'inherit'],
    }),
  });
  const listeners: ListenerProcess[] =
    mode === 'shared'
      ? [
          spawnListener({
            LISTENER_MODE: 'shared',
            LISTENER_CONFIG_DIR: configDir,
            LISTENER_METRICS_ADDR: '127.0.0.1:0',
            LOG_LEVEL: 'warn',
            POD_NAME: 'listener-shared',
          }),
        ]
      : configPaths.map((path, i) =>
          spawnListener({ LISTENER_CONFIG_PATH: path, POD_NAME: `listener-${i}` }),
        );
  try {
    // Ready: the scale set's session is open, which is what the listener's readiness probe waits for.
    // Looked at every 10 ms (the simulator is in this process), from the spawn of its process.
    const readyAt = new Map<number, number>();
    await waitUntil(
      () => {
        for (const s of sim.sessions())
          if (!readyAt.has(s.scaleSetId)) readyAt.set(s.scaleSetId, performance.now());
        return scaleSetIds.every((id) => readyAt.has(id));
      },
      // Twenty Node processes starting at once on a busy 2-core machine take minutes.
      120_000 + 15_000 * n,
      'every listener to open its session',
      10,
    );
    const readyMs = scaleSetIds
      .map(
        (id, i) => (readyAt.get(id) ?? 0) - (listeners[mode === 'shared' ? 0 : i] ?? listeners[0]).startedAt,
      )
      .sort((a, b) => a - b);
    await new Promise((r) => setTimeout(r, 3_000));
    for (const l of listeners) l.idle = processMemory(l.child.pid!).rssKiB;
    const cpuOf = () => listeners.reduce((sum, l) => sum + processCpuSeconds(l.child.pid!), 0);
    const cpuAtIdle = cpuOf();

    sim.resetCallCounts();
    const ticker = setInterval(() => player.tick(), 200);
    const queued = new Map<string, number>();
    for (const id of scaleSetIds) {
      for (let j = 0; j < args.jobs; j++) {
        const job = sim.enqueueJob({ scaleSetId: id, durationMs: args.jobDurationMs });
        queued.set(job.jobId, Date.parse(job.queueTime));
      }
    }
    const total = scaleSetIds.length * args.jobs;
    const started = Date.now();
    await waitUntil(
      () => sim.jobs().filter((j) => queued.has(j.jobId) && j.state === 'completed').length === total,
      600_000,
      `${total} jobs to complete`,
    );
    const makespanMs = Date.now() - started;
    const cpuS = cpuOf() - cpuAtIdle;
    clearInterval(ticker);
    // The listeners' own Actions calls: sessions, polls, acks, acquires (the player's JIT configs are not theirs).
    const actionsCalls = Object.entries(sim.callCounts())
      .filter(([route]) => !/generatejitconfig|<unmatched>/.test(route))
      .reduce((sum, [, count]) => sum + count, 0);
    const waits = sim
      .jobs()
      .filter((j) => queued.has(j.jobId))
      .map((j) => Date.parse(j.runnerAssignTime) - (queued.get(j.jobId) ?? 0))
      .sort((a, b) => a - b);
    const memory = listeners.map((l) => ({ idle: l.idle ?? 0, peak: processMemory(l.child.pid!).hwmKiB }));
    const mib = (kib: number) => kib / 1024;
    return {
      mode,
      scaleSets: n,
      processes: listeners.length,
      jobs: total,
      makespanS: makespanMs / 1000,
      idleTotalMiB: mib(memory.reduce((s, m) => s + m.idle, 0)),
      peakTotalMiB: mib(memory.reduce((s, m) => s + m.peak, 0)),
      peakMaxMiB: mib(Math.max(...memory.map((m) => m.peak))),
      readyP50Ms: percentile(readyMs, 50),
      readyMaxMs: readyMs[readyMs.length - 1] ?? 0,
      waitP50Ms: percentile(waits, 50),
      waitP95Ms: percentile(waits, 95),
      kubePatchesPerJob: api.patches() / total,
      cpuMsPerJob: (cpuS * 1000) / total,
      actionsCallsPerJob: actionsCalls / total,
    };
  } finally {
    for (const l of listeners) if (l.child.exitCode === null) l.child.kill('SIGTERM');
    await Promise.all(
      listeners.map(
        (l) => new Promise((done) => (l.child.exitCode !== null ? done(0) : l.child.once('exit', done))),
      ),
    );
    api.server.close();
    await player.close();
  }
}

/** Runs the listener benchmark with `argv` (also `npm run bench -- --listeners-only --scale-sets ...`, see fleet.ts). */
export async function runListenerBench(argv: string[]): Promise<void> {
  const args = parseArgs(argv);
  const sim = await startSimulator({
    seed: { timing: { longPollTimeoutMs: 5_000, autoStartJobs: true, sessionIdleTimeoutMs: 120_000 } },
  });
  const dir = mkdtempSync(join(tmpdir(), 'aro-bench-listeners-'));
  const rows = [];
  try {
    for (const mode of args.modes) {
      for (const n of args.scaleSets) {
        const row = await runSize(sim, n, mode, args, dir);
        rows.push(row);
        console.log(JSON.stringify(row));
      }
    }
  } finally {
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(
    '\n| mode | scale sets | processes | jobs | RSS idle total (MiB) | peak total (MiB) | peak of one process (MiB) | marginal per added set, peak (MiB) | ready p50/max (ms) | job wait p50/p95 (ms) | makespan (s) | Actions calls / job | Kubernetes patches / job | listener CPU / job (ms) |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    // Against the smallest size measured in the same mode: what each added scale set costs.
    const base = rows
      .filter((o) => o.mode === r.mode && o.scaleSets < r.scaleSets)
      .sort((a, b) => a.scaleSets - b.scaleSets)[0];
    const marginal = base
      ? ((r.peakTotalMiB - base.peakTotalMiB) / (r.scaleSets - base.scaleSets)).toFixed(1)
      : '-';
    console.log(
      `| ${r.mode} | ${r.scaleSets} | ${r.processes} | ${r.jobs} | ${r.idleTotalMiB.toFixed(0)} | ${r.peakTotalMiB.toFixed(0)} | ${r.peakMaxMiB.toFixed(0)} | ${marginal} | ${r.readyP50Ms.toFixed(0)}/${r.readyMaxMs.toFixed(0)} | ${r.waitP50Ms.toFixed(0)}/${r.waitP95Ms.toFixed(0)} | ${r.makespanS.toFixed(1)} | ${r.actionsCallsPerJob.toFixed(2)} | ${r.kubePatchesPerJob.toFixed(2)} | ${r.cpuMsPerJob.toFixed(1)} |`,
    );
  }
  // A listener pod is one per-pod process: the figure the cluster pays per scale set.
  const perPod = rows.filter((r) => r.mode === 'per-pod');
  if (perPod.length > 0) {
    const peak = Math.max(...perPod.map((r) => r.peakMaxMiB));
    const ready = Math.max(...perPod.map((r) => r.readyP50Ms));
    const verdict = (ok: boolean) => (ok ? 'within the goal' : 'OVER the goal');
    console.log(
      `\nlistener pod peak RSS ${peak.toFixed(0)} MiB against a goal of <= ${GOAL_PEAK_MIB} MiB: ${verdict(peak <= GOAL_PEAK_MIB)}`,
    );
    console.log(
      `listener pod ready (session open) after ${ready.toFixed(0)} ms, p50, against a goal of <= ${GOAL_READY_MS} ms: ${verdict(ready <= GOAL_READY_MS)}`,
    );
  }
}

if (require.main === module) {
  runListenerBench(process.argv.slice(2)).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
