// `npm run switch:upstream -- --arc <upstream checkout>`: upstream's real manager and ghalistener,
// built from its source, switched with ARO both ways on the test control plane with the simulator as
// the Actions service. What it runs and judges: tools/upstream-switch/README.md.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { runScenario, type ScenarioResult, type Side, type SwitchResult } from './scenario';
import { findUpstreamBuild } from './upstream';

const ORDERS: Record<string, Side[][]> = {
  both: [
    ['aro', 'upstream', 'aro'],
    ['upstream', 'aro', 'upstream'],
  ],
  'aro-first': [['aro', 'upstream', 'aro']],
  'upstream-first': [['upstream', 'aro', 'upstream']],
};

const USAGE = `usage: npm run switch:upstream -- --arc <dir> [--compat 0.14.2|main] [--order both|aro-first|upstream-first]
       [--long-job-seconds 60] [--short-job-seconds 5] [--settle-seconds 20] [--chart <dir>] [--out <file.json>]
  --arc     a checkout of actions/actions-runner-controller with bin/manager and bin/ghalistener built
  --compat  UPSTREAM_COMPATIBILITY for ARO: the upstream version the checkout is (default 0.14.2)
  --chart   the scale-set chart rendered (default <arc>/charts/gha-runner-scale-set)`;

/** One row per switch, the figures the judgement reads; a mark where a promise is broken. */
function table(results: ScenarioResult[]): string {
  const head = [
    'switch',
    'listeners (max)',
    '>1 listener',
    'listener starts',
    'session creates',
    'Lease taken',
    'idle kept',
    'idle < min',
    'long job on its runner',
    'jobs once',
    'refill to min',
    'leaked regs',
  ];
  const row = (s: SwitchResult): string[] => [
    `${s.from} -> ${s.to}`,
    `${s.listenersMax}${s.listenersMax > 1 ? ' ✗' : ''}`,
    `${(s.moreThanOneListenerMs / 1_000).toFixed(1)} s`,
    String(s.listenerStarts),
    String(s.sessionCreates),
    `${(s.leaseTakenMs / 1_000).toFixed(1)} s`,
    `${s.idleAtSwitch - s.idleDeregistered}/${s.idleAtSwitch}${s.idleDeregistered > 0 ? ' ✗' : ''}`,
    `${(s.belowMinIdleMs / 1_000).toFixed(1)} s`,
    s.longJobOnItsRunner ? 'yes' : 'no ✗',
    s.jobsOnce,
    s.refillMs === null ? 'never ✗' : `${(s.refillMs / 1_000).toFixed(1)} s`,
    `${s.leakedRegistrations}${s.leakedRegistrations > 0 ? ' ✗' : ''}`,
  ];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`];
  for (const r of results) {
    for (const s of r.switches) lines.push(`| ${row(s).join(' | ')} |`);
    const u = r.uninstall;
    lines.push(
      `| uninstall under ${u.by} (${r.order.join(' -> ')}) | ${u.seconds === null ? 'not finished in 180 s ✗' : `${u.seconds.toFixed(1)} s`}` +
        ` | left: ${u.left.length === 0 ? 'nothing' : `${u.left.join(', ')} ✗`} |`,
    );
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      arc: { type: 'string' },
      compat: { type: 'string', default: '0.14.2' },
      order: { type: 'string', default: 'both' },
      chart: { type: 'string' },
      'long-job-seconds': { type: 'string', default: '60' },
      'short-job-seconds': { type: 'string', default: '5' },
      'settle-seconds': { type: 'string', default: '20' },
      out: { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  const orders = ORDERS[values.order ?? 'both'];
  if (values.help || !values.arc || !orders) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(values.help ? 0 : 2);
  }
  const build = findUpstreamBuild(resolve(values.arc));
  const workDir = mkdtempSync(join(tmpdir(), 'aro-upstream-switch-'));
  mkdirSync(workDir, { recursive: true });
  const log = (line: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);
  log(`upstream build ${build.dir}; compat ${values.compat}; logs in ${workDir}`);
  const results: ScenarioResult[] = [];
  for (const order of orders) {
    results.push(
      await runScenario({
        build,
        chart: values.chart ? resolve(values.chart) : join(build.dir, 'charts', 'gha-runner-scale-set'),
        compat: values.compat ?? '0.14.2',
        order,
        longJobSeconds: Number(values['long-job-seconds']),
        shortJobSeconds: Number(values['short-job-seconds']),
        settleSeconds: Number(values['settle-seconds']),
        workDir,
        log,
      }),
    );
  }
  const out = values.out ?? join(workDir, 'result.json');
  writeFileSync(out, JSON.stringify(results, null, 2));
  process.stdout.write(`\n${table(results)}\n\nresult: ${out}\n`);
  const broken = results.some(
    (r) =>
      r.uninstall.seconds === null ||
      r.uninstall.left.length > 0 ||
      r.switches.some(
        (s) =>
          s.listenersMax > 1 ||
          s.idleDeregistered > 0 ||
          !s.longJobOnItsRunner ||
          !/^(\d+)\/\1$/.test(s.jobsOnce) ||
          s.leakedRegistrations > 0,
      ),
  );
  process.exit(broken ? 1 : 0);
}

main().catch((err: Error) => {
  process.stderr.write(`${err.stack ?? err.message}\n`);
  process.exit(1);
});
