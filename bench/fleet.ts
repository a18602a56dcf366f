/**
 * The EphemeralRunner controller at fleet scale, measured as production runs it: the compiled app
 * (`npm run build`) in a process of its own against a real kube-apiserver + etcd and the Actions
 * simulator. For each size N it starts a fresh controller, creates N runners at once and pushes each
 * through a job (the benchmark plays the kubelet and the listener), then prints and writes figures;
 * it asserts nothing (timings on a shared 2-core machine are not pass/fail material).
 *
 *   npm run bench -- [--sizes 100,500,1000] [--concurrency 2] [--idle 1000] [--burst 100] [--node-options '...'] [--node-flags '...']
 *
 * Requests are counted from the apiserver's audit log by user (the controller runs as its own user),
 * because apiserver_request_total has no user label and the benchmark's own requests would blur it.
 * Memory and CPU are read from /proc for the controller's pid: its RSS is its own, not the benchmark's.
 * `--idle N` adds a second mode: a burst of `--burst` runners while N runners sit idle (informers full).
 * `--scale-sets 1,5,20` measures a fleet of scale sets instead, controller and listeners together, in
 * both listener modes (bench/scale-set-fleet.ts); `--listeners-only` the listeners alone (bench/listeners.ts);
 * `--headroom` warm headroom off and on under a ramp of bursts (bench/headroom.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { V1Namespace, V1Pod, V1Secret } from '@kubernetes/client-node';
import { EphemeralRunnerKind, type EphemeralRunner, type EphemeralRunnerSpec } from '@aro/api';
import { MultiClient } from '@aro/actions';
import { Informer, KubeClient, NamespaceKind, PodKind, SecretKind } from '@aro/kube';
import { DEFAULT_PAT, startSimulator, type RunningSimulator } from '../apps/simulator/src';

import {
  ControlPlane,
  ProcessSampler,
  auditCounts,
  auditedRequests,
  freePort,
  kubeConfigForUser,
  percentile,
  runnerContainerRunning,
  runnerContainerTerminated,
} from '../test/harness';
import { CRD_PATHS } from '../test/harness/global-setup';
import { type IdleResult, type SizeResult, parseArgs, report } from './fleet-report';
import { HeapSampler } from './heap-sampler';
import { runListenerBench } from './listeners';
import { runScaleSetFleetBench } from './scale-set-fleet';
import { runHeadroomBench } from './headroom';

const root = resolve(__dirname, '..');
const controllerMain = join(root, 'dist/apps/controller/apps/controller/src/main.js');
/** The image's entrypoint, run as the image runs it (its Node flags included), against this checkout. */
const controllerEntrypoint = join(root, 'image/bin/aro-controller');
const CONTROLLER_USER = 'aro-controller';
const GITHUB_SECRET = 'github-config-secret';

const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

/** Resolves `until` for a name whenever the informer's copy of it satisfies a condition. */
class Waiters<T extends { metadata?: { name?: string } }> {
  private readonly pending = new Map<
    string,
    Array<{ test: (o: T | undefined) => boolean; done: () => void }>
  >();

  constructor(
    private readonly informer: Informer<T>,
    private readonly namespace: string,
  ) {
    informer.addEventHandler((e) => this.check(e.object.metadata?.name ?? ''));
  }

  until(name: string, test: (o: T | undefined) => boolean): Promise<void> {
    if (test(this.informer.get(this.namespace, name))) return Promise.resolve();
    return new Promise((done) => {
      const list = this.pending.get(name) ?? [];
      list.push({ test, done });
      this.pending.set(name, list);
    });
  }

  private check(name: string): void {
    const list = this.pending.get(name);
    if (!list) return;
    const object = this.informer.get(this.namespace, name);
    const left = list.filter((w) => {
      if (!w.test(object)) return true;
      w.done();
      return false;
    });
    if (left.length > 0) this.pending.set(name, left);
    else this.pending.delete(name);
  }
}

/** At most `limit` of the benchmark's own writes at once, so the player does not swamp the apiserver. */
function limiter(limit: number): <T>(fn: () => Promise<T>) => Promise<T> {
  let running = 0;
  const queue: Array<() => void> = [];
  return async <T>(fn: () => Promise<T>): Promise<T> => {
    if (running >= limit) await new Promise<void>((r) => queue.push(r));
    running++;
    try {
      return await fn();
    } finally {
      running--;
      queue.shift()?.();
    }
  };
}

interface ControllerProcess {
  child: ChildProcess;
  sampler: ProcessSampler;
  heap: HeapSampler;
  readyMs: number;
  idleRssKiB: number;
  idleHeapMiB: number;
  stop(): Promise<void>;
}

async function startController(
  kubeconfigPath: string,
  namespace: string,
  concurrency: number,
  nodeOptions: string,
  nodeFlags: string,
): Promise<ControllerProcess> {
  const port = await freePort();
  const began = Date.now();
  const child = spawn('sh', [controllerEntrypoint], {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      ARO_HOME: root,
      NODE_OPTIONS: nodeOptions,
      ARO_NODE_FLAGS: nodeFlags,
      KUBECONFIG: kubeconfigPath,
      WATCH_NAMESPACE: namespace,
      LEADER_ELECTION: 'false',
      PROBE_PORT: String(port),
      PROBE_BIND_ADDRESS: '127.0.0.1',
      MAX_CONCURRENT_RECONCILES: String(concurrency),
      LOG_LEVEL: 'warn',
      ORPHAN_SWEEP_INTERVAL_SECONDS: '3600',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const sampler = new ProcessSampler(child.pid ?? 0);
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`the controller exited with ${child.exitCode} before it was ready`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/readyz`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() - began > 120_000) throw new Error('the controller was not ready within 120 s');
    await new Promise((r) => setTimeout(r, 20));
  }
  const readyMs = Date.now() - began;
  // Idle: ready, caches synced, nothing to do; let start-up garbage settle before reading.
  await new Promise((r) => setTimeout(r, 3_000));
  sampler.sample();
  const idleRssKiB = sampler.peakRssKiB;
  const heap = new HeapSampler(`http://127.0.0.1:${port}/metrics`);
  const idleHeapMiB = (await heap.sample()) / 1024 / 1024;
  heap.start();
  return {
    child,
    sampler,
    heap,
    readyMs,
    idleRssKiB,
    idleHeapMiB,
    async stop() {
      sampler.stop();
      heap.stop();
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    },
  };
}

class Bench {
  private readonly kube: KubeClient;
  private readonly run = limiter(32);
  private counter = 0;

  constructor(
    cp: ControlPlane,
    private readonly sim: RunningSimulator,
    private readonly namespace: string,
    private readonly scaleSetId: number,
    private readonly pods: Waiters<V1Pod>,
    private readonly runners: Waiters<EphemeralRunner>,
  ) {
    this.kube = new KubeClient(cp.kubeConfig());
  }

  async createRunner(name: string): Promise<void> {
    const spec: EphemeralRunnerSpec = {
      githubConfigUrl: this.sim.configUrl({ org: 'octo' }),
      githubConfigSecret: GITHUB_SECRET,
      runnerScaleSetId: this.scaleSetId,
      spec: {
        restartPolicy: 'Never',
        containers: [
          {
            name: 'runner',
            image: 'ghcr.io/actions/actions-runner:latest',
            command: ['/home/runner/run.sh'],
          },
        ],
      },
    };
    await this.run(() =>
      this.kube.create<EphemeralRunner>(EphemeralRunnerKind, {
        metadata: { name, namespace: this.namespace },
        spec,
      }),
    );
  }

  /** Created -> pod -> registered -> job -> exit 0 -> gone, as the kubelet and the listener would drive it. */
  async lifecycle(
    name: string,
    marks: { toPod: number[]; toGone: number[]; lastPodAt: { t: number } },
    jobs = true,
  ): Promise<void> {
    const t0 = Date.now();
    await this.createRunner(name);
    await this.pods.until(name, (p) => p !== undefined);
    marks.toPod.push(Date.now() - t0);
    marks.lastPodAt.t = Math.max(marks.lastPodAt.t, Date.now());
    await this.run(() => runnerContainerRunning(this.namespace, name));
    await this.runners.until(name, (r) => r?.status?.phase === 'Pending' && (r.status.runnerId ?? 0) > 0);
    if (!jobs) return;
    await this.run(() =>
      this.kube.mergePatchStatus(EphemeralRunnerKind, this.namespace, name, {
        status: { jobId: `job-${name}` },
      }),
    );
    await this.runners.until(name, (r) => r?.status?.phase === 'Running');
    this.sim.runnerExited(name, 0);
    await this.run(() => runnerContainerTerminated(this.namespace, name, 0, { phase: 'Succeeded' }));
    await this.runners.until(name, (r) => r === undefined);
    marks.toGone.push(Date.now() - t0);
  }

  nextName(prefix: string): string {
    return `${prefix}-${++this.counter}`;
  }
}

async function main(): Promise<void> {
  // `--scale-sets N,M`: a fleet of scale sets, controller and listeners together (bench/scale-set-fleet.ts);
  // with `--listeners-only`, the listeners alone on a stub apiserver (bench/listeners.ts).
  if (process.argv.includes('--listeners-only'))
    return runListenerBench(process.argv.slice(2).filter((a) => a !== '--listeners-only'));
  if (process.argv.includes('--scale-sets')) return runScaleSetFleetBench(process.argv.slice(2));
  // `--headroom`: warm headroom off and on under a ramp of bursts (bench/headroom.ts).
  if (process.argv.includes('--headroom'))
    return runHeadroomBench(process.argv.slice(2).filter((a) => a !== '--headroom'));
  const args = parseArgs(process.argv.slice(2));
  if (!existsSync(controllerMain)) {
    throw new Error(`${controllerMain} is missing: run \`npm run build\` first (\`npm run bench\` does)`);
  }
  const cp = await ControlPlane.start({
    crdPaths: CRD_PATHS,
    withoutControllerManager: true,
    auditLog: true,
    log: () => undefined,
  });
  process.env.ARO_TEST_CONTROL_PLANE = cp.infoPath;
  process.env.ARO_TEST_KUBECONFIG = cp.info.kubeconfigPath;
  const sim = await startSimulator({ seed: { timing: { autoStartJobs: false } } });
  const results: SizeResult[] = [];
  let idleResult: IdleResult | undefined;
  try {
    const admin = new KubeClient(cp.kubeConfig());
    const controllerKc = await kubeConfigForUser(CONTROLLER_USER, ['system:masters']);
    const kubeconfigPath = join(cp.info.runDir, 'controller.kubeconfig');
    writeFileSync(kubeconfigPath, controllerKc.exportConfig());
    const scaleSet = await new MultiClient({ retry: { maxRetries: 0 } })
      .getClientFor({
        configUrl: sim.configUrl({ org: 'octo' }),
        namespace: 'bench',
        credentials: { kind: 'pat', token: DEFAULT_PAT },
      })
      .createRunnerScaleSet({ name: `bench-${Date.now()}`, runnerGroupId: 1 });

    let runs = 0;
    const runSize = async (
      size: number,
      mode: { idle?: number } = {},
    ): Promise<SizeResult & { lifecycles: number[] }> => {
      // One namespace per run: the idle mode's baseline burst can have a size of the list above.
      const namespace = `bench-${++runs}-${size}-${mode.idle ?? 0}`;
      await admin.create<V1Namespace>(NamespaceKind, { metadata: { name: namespace } });
      await admin.create<V1Secret>(SecretKind, {
        metadata: { name: GITHUB_SECRET, namespace },
        stringData: { github_token: DEFAULT_PAT },
      });
      const podInformer = new Informer<V1Pod>(admin, PodKind, { namespace });
      const runnerInformer = new Informer<EphemeralRunner>(admin, EphemeralRunnerKind, { namespace });
      const bench = new Bench(
        cp,
        sim,
        namespace,
        scaleSet.id,
        new Waiters(podInformer, namespace),
        new Waiters(runnerInformer, namespace),
      );
      void podInformer.start();
      void runnerInformer.start();
      await Promise.all([podInformer.waitForSync(), runnerInformer.waitForSync()]);

      const controller = await startController(
        kubeconfigPath,
        namespace,
        args.concurrency,
        args.nodeOptions,
        args.nodeFlags,
      );
      try {
        const idleMarks = { toPod: [] as number[], toGone: [] as number[], lastPodAt: { t: 0 } };
        if (mode.idle) {
          await Promise.all(
            Array.from({ length: mode.idle }, () =>
              bench.lifecycle(bench.nextName('idle'), idleMarks, false),
            ),
          );
        }
        await new Promise((r) => setTimeout(r, 2_000)); // the audit log is written in batches
        const before = await auditCounts(cp.info.auditLogPath!, CONTROLLER_USER, 0);
        sim.resetCallCounts();
        const cpuBefore = controller.sampler.cpuSeconds();
        const marks = { toPod: [] as number[], toGone: [] as number[], lastPodAt: { t: 0 } };
        const started = Date.now();
        await Promise.all(Array.from({ length: size }, () => bench.lifecycle(bench.nextName('r'), marks)));
        await new Promise((r) => setTimeout(r, 3_000));
        const after = await auditCounts(cp.info.auditLogPath!, CONTROLLER_USER, before.lines);
        const requestsPerRunner: Record<string, number> = {};
        let writes = 0;
        let reads = 0;
        for (const [key, n] of [...after.counts].sort()) {
          requestsPerRunner[key] = Number((n / size).toFixed(2));
          if (WRITE_VERBS.has(key.split(' ')[0] ?? '')) writes += n;
          else if (!key.startsWith('watch')) reads += n;
        }
        const actionsCalls = Object.entries(sim.callCounts())
          .filter(([route]) => !/registration-token|runner-registration|access_tokens/.test(route))
          .reduce((sum, [, n]) => sum + n, 0);
        const ms = (v: number[]): { p50: number; p95: number; p99: number } => ({
          p50: percentile(v, 50),
          p95: percentile(v, 95),
          p99: percentile(v, 99),
        });
        return {
          size,
          readyMs: controller.readyMs,
          idleRssMiB: controller.idleRssKiB / 1024,
          peakRssMiB: controller.sampler.peakRssKiB / 1024,
          idleHeapMiB: controller.idleHeapMiB,
          peakHeapMiB: controller.heap.peakMiB,
          cpuSeconds: controller.sampler.cpuSeconds() - cpuBefore,
          allPodsMs: marks.lastPodAt.t - started,
          toPod: ms(marks.toPod),
          lifecycle: ms(marks.toGone),
          lifecycles: marks.toGone,
          writesPerRunner: writes / size,
          readsPerRunner: reads / size,
          // The runners' own jitconfig secrets only: `get secrets` also counts the reads of the
          // GitHub credentials secret, which the budget does not cover.
          secretReadsPerRunner:
            (await auditedRequests(cp.info.auditLogPath!, before.lines)).requests.filter(
              (r) =>
                r.user === CONTROLLER_USER &&
                r.verb === 'get' &&
                r.resource === 'secrets' &&
                r.namespace === namespace &&
                r.name !== GITHUB_SECRET,
            ).length / size,
          actionsCallsPerRunner: actionsCalls / size,
          requestsPerRunner,
        };
      } finally {
        await controller.stop();
        await podInformer.stop();
        await runnerInformer.stop();
      }
    };

    for (const size of args.sizes) {
      process.stderr.write(`[bench] ${size} runners...\n`);
      const { lifecycles: _l, ...result } = await runSize(size);
      results.push(result);
      process.stderr.write(`[bench] ${size} runners: ${JSON.stringify(result)}\n`);
    }
    if (args.idle > 0) {
      process.stderr.write(`[bench] burst of ${args.burst} with ${args.idle} idle runners...\n`);
      const baseline = await runSize(args.burst);
      const loaded = await runSize(args.burst, { idle: args.idle });
      idleResult = {
        idle: args.idle,
        burst: args.burst,
        baseline: { p50: baseline.lifecycle.p50, p95: baseline.lifecycle.p95 },
        lifecycle: { p50: loaded.lifecycle.p50, p95: loaded.lifecycle.p95 },
        peakRssMiB: loaded.peakRssMiB,
        peakHeapMiB: loaded.peakHeapMiB,
      };
    }
  } finally {
    await sim.stop();
    await cp.stop();
  }
  report(args, results, idleResult);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
