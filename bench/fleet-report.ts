/**
 * The fleet benchmark's command line and its report: the table it prints and the JSON it writes to
 * bench/results, each figure against the budget of issue #14.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(__dirname, '..');

/**
 * The budget of issue #14, per successful runner; 11 writes since the eviction protection (#23) marks
 * a runner's pod busy when its job starts, one pod patch; 12 since the job link (#26) labels the
 * EphemeralRunner with its job, one metadata patch (test/integration/ephemeral-runner/cost.test.ts).
 */
export const BUDGET = {
  writesPerRunner: 12,
  actionsCallsPerRunner: 1,
  secretReadsPerRunner: 2,
  idleRssMiB: 90,
  rss500MiB: 120,
  readyMs: 1_000,
};

export interface Args {
  sizes: number[];
  concurrency: number;
  idle: number;
  burst: number;
  /** Node flags for the controller process, e.g. `--max-semi-space-size=1`, to compare settings. */
  nodeOptions: string;
  /** Flags the entrypoint passes to node itself (ARO_NODE_FLAGS): V8 flags NODE_OPTIONS refuses. */
  nodeFlags: string;
}

/**
 * The command line. Written by hand rather than with `node:util`'s `parseArgs`, which refuses a value
 * that starts with a dash (`--node-options "--max-semi-space-size=1"`, the documented use).
 */
export function parseArgs(argv: string[]): Args {
  const args: Args = {
    sizes: [100, 500, 1000],
    concurrency: 2,
    idle: 0,
    burst: 100,
    nodeOptions: '',
    nodeFlags: '',
  };
  for (let i = 0; i < argv.length; i++) {
    const value = argv[i + 1] ?? '';
    switch (argv[i]) {
      case '--sizes':
        args.sizes = value
          .split(',')
          .map(Number)
          .filter((n) => n > 0);
        i++;
        break;
      case '--concurrency':
        args.concurrency = Number(value);
        i++;
        break;
      case '--idle':
        args.idle = Number(value);
        i++;
        break;
      case '--node-options':
        args.nodeOptions = value;
        i++;
        break;
      case '--node-flags':
        args.nodeFlags = value;
        i++;
        break;
      case '--burst':
        args.burst = Number(value);
        i++;
        break;
      default:
        throw new Error(`unknown argument ${argv[i]}; see the comment at the top of bench/fleet.ts`);
    }
  }
  return args;
}

export interface SizeResult {
  size: number;
  readyMs: number;
  idleRssMiB: number;
  peakRssMiB: number;
  idleHeapMiB: number;
  peakHeapMiB: number;
  cpuSeconds: number;
  allPodsMs: number;
  toPod: { p50: number; p95: number; p99: number };
  lifecycle: { p50: number; p95: number; p99: number };
  writesPerRunner: number;
  readsPerRunner: number;
  secretReadsPerRunner: number;
  actionsCallsPerRunner: number;
  requestsPerRunner: Record<string, number>;
}

/** The second mode: a burst while runners sit idle, against the same burst alone. */
export interface IdleResult {
  idle: number;
  burst: number;
  lifecycle: { p50: number; p95: number };
  baseline: { p50: number; p95: number };
  peakRssMiB: number;
  peakHeapMiB: number;
}

export function report(args: Args, results: SizeResult[], idle?: IdleResult): void {
  const ratio = (v: number, budget: number): string =>
    `${v.toFixed(2)} (${((v / budget) * 100).toFixed(0)}%)`;
  const rows = results.map((r) =>
    [
      r.size,
      (r.allPodsMs / 1000).toFixed(1),
      `${r.toPod.p50}/${r.toPod.p95}/${r.toPod.p99}`,
      `${r.lifecycle.p50}/${r.lifecycle.p95}/${r.lifecycle.p99}`,
      ratio(r.writesPerRunner, BUDGET.writesPerRunner),
      r.readsPerRunner.toFixed(2),
      ratio(r.secretReadsPerRunner, BUDGET.secretReadsPerRunner),
      ratio(r.actionsCallsPerRunner, BUDGET.actionsCallsPerRunner),
      `${r.idleRssMiB.toFixed(0)} / ${r.peakRssMiB.toFixed(0)}`,
      `${r.idleHeapMiB.toFixed(0)} / ${r.peakHeapMiB.toFixed(0)}`,
      r.cpuSeconds.toFixed(1),
      ratio(r.readyMs, BUDGET.readyMs),
    ].join(' | '),
  );
  const lines = [
    `ARO fleet benchmark: compiled controller, ${args.concurrency} concurrent reconciles, Node ${process.version}${args.nodeOptions ? ` (${args.nodeOptions})` : ''}${args.nodeFlags ? ` (flags ${args.nodeFlags})` : ''}, ${new Date().toISOString()}`,
    '',
    '| runners | all pods (s) | created->pod p50/p95/p99 (ms) | lifecycle p50/p95/p99 (ms) | writes/runner (of 11) | reads/runner | secret reads/runner (of 2) | Actions calls/runner (of 1) | RSS idle / peak (MiB) | heap idle / peak (MiB) | CPU (s) | ready (ms, of 1000) |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r} |`),
    '',
    ...results.map(
      (r) =>
        `requests per runner at ${r.size}: ${Object.entries(r.requestsPerRunner)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')}`,
    ),
    ...(idle
      ? [
          '',
          `burst of ${idle.burst} while ${idle.idle} runners sit idle: lifecycle p50 ${idle.lifecycle.p50} ms, p95 ${idle.lifecycle.p95} ms` +
            ` (without them: p50 ${idle.baseline.p50} ms, p95 ${idle.baseline.p95} ms);` +
            ` controller peak RSS ${idle.peakRssMiB.toFixed(0)} MiB, heap ${idle.peakHeapMiB.toFixed(0)} MiB`,
        ]
      : []),
  ];
  console.log(lines.join('\n'));
  const dir = join(root, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${new Date().toISOString().slice(0, 19).replace(/:/g, '-')}.json`);
  writeFileSync(
    file,
    JSON.stringify({ node: process.version, args, results, idle, budget: BUDGET }, null, 2),
  );
  console.log(`\nwritten to ${file}`);
}
