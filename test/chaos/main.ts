// `npm run chaos`: seeded runs of the whole product with faults at random moments, and the invariants.
import 'reflect-metadata';
import { appendFileSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { TIME_SCALE_ENV, useTimeScaleForLoad } from '../harness/time-scale';
import { formatDuration } from '../sandbox/stats';
import { INVARIANTS } from './invariants';
import { DEFAULT_CHAOS, runChaos, type ChaosOptions, type ChaosRun } from './run';
import { CLASSIC_KINDS, FAULT_KINDS, describeFault, type FaultKind } from './schedule';

const USAGE = `usage: npm run chaos -- [options]

  --seed S          the first run's seed (default: drawn, and printed); run i has seed S+i
  --runs K          runs, one after the other (default 1)
  --jobs N          jobs per run (default ${DEFAULT_CHAOS.jobs})
  --max-runners N   the scale set's maxRunners (default ${DEFAULT_CHAOS.maxRunners})
  --duration S      seconds each job runs (default ${DEFAULT_CHAOS.duration})
  --rate R          jobs queued per second (default ${DEFAULT_CHAOS.rate})
  --faults MIN-MAX  faults per run (default ${DEFAULT_CHAOS.minFaults}-${DEFAULT_CHAOS.maxFaults})
  --kinds K,K       only these faults (default all: ${FAULT_KINDS.join(', ')});
                    'classic' = the eleven before the restarts (the schedules seeds drew before them)
  --listener-mode M pod (default: a listener pod per scale set) or shared (the controller chart's shared
                    listener Deployment; kill-listener then kills the replica holding the session)
  --timeout S       give up on a run's workload after S seconds (default ${DEFAULT_CHAOS.timeoutSeconds})
  --results FILE    append each run as a JSON line to FILE
  --logs DIR        each run's sandbox output (default $TMPDIR/aro-chaos); kept for failing runs only

A failing seed replays the same faults at the same moments: npm run chaos -- --seed S`;

interface Cli {
  seed: number;
  runs: number;
  options: ChaosOptions;
  results?: string;
  logs: string;
}

function parse(argv: string[]): Cli | 'help' {
  const { values } = parseArgs({
    args: argv,
    options: {
      seed: { type: 'string' },
      runs: { type: 'string' },
      jobs: { type: 'string' },
      'max-runners': { type: 'string' },
      duration: { type: 'string' },
      rate: { type: 'string' },
      faults: { type: 'string' },
      kinds: { type: 'string' },
      'listener-mode': { type: 'string' },
      timeout: { type: 'string' },
      results: { type: 'string' },
      logs: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) return 'help';
  const num = (
    name: string,
    text: string | undefined,
    fallback: number,
    ok: (n: number) => boolean,
  ): number => {
    if (text === undefined) return fallback;
    const n = Number(text);
    if (!Number.isFinite(n) || !ok(n)) throw new Error(`--${name} ${text}: out of range`);
    return n;
  };
  const whole = (n: number): boolean => Number.isInteger(n) && n >= 0;
  const [minFaults, maxFaults] = (values.faults ?? `${DEFAULT_CHAOS.minFaults}-${DEFAULT_CHAOS.maxFaults}`)
    .split('-')
    .map(Number);
  if (!whole(minFaults) || !whole(maxFaults) || minFaults > maxFaults) {
    throw new Error(`--faults ${values.faults}: must be MIN-MAX, whole numbers, MIN <= MAX`);
  }
  const kinds = values.kinds
    ?.split(',')
    .map((k) => k.trim())
    .flatMap((k): string[] => (k === 'classic' ? [...CLASSIC_KINDS] : [k]));
  const unknown = kinds?.filter((k) => !(FAULT_KINDS as readonly string[]).includes(k)) ?? [];
  if (unknown.length > 0)
    throw new Error(`--kinds: unknown ${unknown.join(', ')}; known: ${FAULT_KINDS.join(', ')}`);
  const listenerMode = values['listener-mode'] ?? 'pod';
  if (listenerMode !== 'pod' && listenerMode !== 'shared') {
    throw new Error(`--listener-mode ${listenerMode}: must be pod or shared`);
  }
  return {
    seed: num('seed', values.seed, Math.floor(Math.random() * 1_000_000), whole),
    runs: num('runs', values.runs, 1, (n) => whole(n) && n > 0),
    options: {
      jobs: num('jobs', values.jobs, DEFAULT_CHAOS.jobs, (n) => whole(n) && n > 0),
      maxRunners: num(
        'max-runners',
        values['max-runners'],
        DEFAULT_CHAOS.maxRunners,
        (n) => whole(n) && n > 0,
      ),
      duration: num('duration', values.duration, DEFAULT_CHAOS.duration, (n) => n >= 0),
      rate: num('rate', values.rate, DEFAULT_CHAOS.rate, (n) => n > 0),
      minFaults,
      maxFaults,
      ...(kinds ? { kinds: kinds as FaultKind[] } : {}),
      listenerMode,
      timeoutSeconds: num('timeout', values.timeout, DEFAULT_CHAOS.timeoutSeconds, (n) => n > 0),
    },
    ...(values.results ? { results: values.results } : {}),
    logs: values.logs ?? join(tmpdir(), 'aro-chaos'),
  };
}

/** The same run again: the same flags, but --seed this one's and one run, without --results. */
export function replayCommand(seed: number, argv: readonly string[]): string {
  const kept: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const [flag] = argv[i].split('=');
    const takesValue = !argv[i].includes('=') && flag !== '-h' && flag !== '--help';
    if (['--seed', '--runs', '--results', '--logs'].includes(flag)) {
      if (takesValue) i++;
      continue;
    }
    kept.push(argv[i]);
    if (takesValue && i + 1 < argv.length) kept.push(argv[++i]);
  }
  return ['npm run chaos --', '--seed', String(seed), ...kept].join(' ');
}

/** The run's line: seed, listener mode, faults (a miss in brackets), time, and each invariant. */
export function runLine(run: ChaosRun): string {
  const faults = run.faults.map((f) => (f.hit ? describeFault(f.fault) : `[${describeFault(f.fault)}]`));
  const broken = new Set(run.violations.map((v) => v.invariant));
  const invariants = INVARIANTS.map((name) => `${name} ${broken.has(name) ? 'FAIL' : 'ok'}`).join(', ');
  const killedHolder =
    run.listenerMode === 'shared' && run.faults.some((f) => f.hit && f.fault.kind === 'kill-listener');
  // Shared mode: who took the killed replica's session over, and when (none seen: the workload ended first).
  const takeovers = killedHolder
    ? ` | session taken over by ${run.sessionTakeovers.join(', ') || '(none seen during the workload)'}`
    : '';
  return (
    `seed ${run.seed} | listener ${run.listenerMode} | ${run.jobs} jobs in ${formatDuration(run.workloadMs)} (run ${formatDuration(run.wallMs)}) | ` +
    `faults ${faults.join(' ') || '(none)'}${takeovers} | peak runners ${run.highWater.runners} | ${invariants}`
  );
}

async function main(): Promise<number> {
  let cli: Cli | 'help';
  try {
    cli = parse(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (cli === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  mkdirSync(cli.logs, { recursive: true });
  const o = cli.options;
  process.stdout.write(
    `ARO chaos: ${cli.runs} runs from seed ${cli.seed}; ${o.jobs} jobs each at ${o.rate}/s, ${o.duration} s each, ` +
      `maxRunners ${o.maxRunners}, ${o.minFaults}-${o.maxFaults} faults per run, listener mode ${o.listenerMode ?? 'pod'}\n`,
  );
  const runs: ChaosRun[] = [];
  const harnessFailures: number[] = [];
  // What the user set, if anything; null rather than undefined, which would let the default parameter
  // read back the value the first run derived and keep it for every later run.
  const givenTimeScale = process.env[TIME_SCALE_ENV] ?? null;
  for (let i = 0; i < cli.runs; i++) {
    process.stdout.write(`    ${useTimeScaleForLoad(givenTimeScale)}\n`);
    const seed = cli.seed + i;
    const logPath = join(cli.logs, `seed-${seed}.log`);
    let run: ChaosRun;
    try {
      run = await runChaos(seed, o, logPath);
    } catch (err) {
      // The harness could not bring the run up or down (a port race, a full disk): no verdict on the
      // product, but the seed is named so that it can be run again.
      harnessFailures.push(seed);
      process.stdout.write(
        `seed ${seed} | the run failed before its invariants: ${(err as Error).message}\n    log: ${logPath}\n`,
      );
      continue;
    }
    runs.push(run);
    process.stdout.write(`${runLine(run)}\n`);
    for (const v of run.violations) process.stdout.write(`    VIOLATION ${v.invariant}: ${v.detail}\n`);
    if (run.violations.length > 0) process.stdout.write(`    log: ${logPath}\n`);
    else rmSync(logPath, { force: true });
    if (cli.results) {
      appendFileSync(
        cli.results,
        `${JSON.stringify({
          seed,
          listenerMode: run.listenerMode,
          jobs: run.jobs,
          workloadMs: run.workloadMs,
          wallMs: run.wallMs,
          faults: run.faults.map((f) => ({ ...f.fault, hit: f.hit, outcome: f.outcome })),
          violations: run.violations,
          highWater: run.highWater,
          sessionTakeovers: run.sessionTakeovers,
        })}\n`,
      );
    }
  }
  const failing = runs.filter((r) => r.violations.length > 0);
  const counts = INVARIANTS.map((name) => {
    const n = runs.filter((r) => r.violations.some((v) => v.invariant === name)).length;
    return `${name} ${n}`;
  });
  const faults = runs.reduce((n, r) => n + r.faults.filter((f) => f.hit).length, 0);
  process.stdout.write(
    `\nsummary: ${runs.length} runs, ${faults} faults injected, ${runs.reduce((n, r) => n + r.jobs, 0)} jobs, ` +
      `${formatDuration(runs.reduce((n, r) => n + r.wallMs, 0))}; runs with a violation: ${failing.length} ` +
      `(${counts.join(', ')})${harnessFailures.length ? `; runs that failed before their invariants: ${harnessFailures.join(', ')}` : ''}\n`,
  );
  for (const r of failing)
    process.stdout.write(`  replay: ${replayCommand(r.seed, process.argv.slice(2))}\n`);
  return failing.length === 0 && harnessFailures.length === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(
      `chaos failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  },
);
