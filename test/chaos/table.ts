// `node -r @swc-node/register test/chaos/table.ts results.jsonl`: the runs `npm run chaos -- --results`
// wrote, as the Markdown table of docs/reliability.md.
import { readFileSync } from 'node:fs';
import { formatDuration } from '../sandbox/stats';
import type { Violation } from './invariants';
import { describeFault, type PlannedFault } from './schedule';

export interface RunRecord {
  seed: number;
  jobs: number;
  workloadMs: number;
  wallMs: number;
  faults: Array<PlannedFault & { hit: boolean; outcome: string }>;
  violations: Violation[];
  highWater: { runners: number; pods: number };
}

export function markdownTable(records: readonly RunRecord[]): string {
  const rows = records.map((r) => {
    const faults = r.faults.map((f) => (f.hit ? describeFault(f) : `[${describeFault(f)}]`)).join(' ');
    const violations = r.violations.map((v) => `${v.invariant}: ${v.detail}`).join('; ') || '0';
    return `| ${r.seed} | ${faults} | ${violations} | ${r.jobs} | ${r.highWater.runners} | ${formatDuration(r.workloadMs)} | ${formatDuration(r.wallMs)} |`;
  });
  return [
    '| seed | faults (at share of jobs done; [missed]) | violations | jobs | peak live runners | workload | whole run |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
  ].join('\n');
}

if (require.main === module) {
  const records = readFileSync(process.argv[2], 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as RunRecord);
  process.stdout.write(`${markdownTable(records)}\n`);
}
