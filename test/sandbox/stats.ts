export { percentile } from '../harness/stats';

/** Milliseconds as a person reads them: 850 ms, 4.2 s, 2 min 5 s. */
export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${Math.round((ms - minutes * 60_000) / 1_000)} s`;
}

/** Rows of [label, value] as a two-column table with a rule above and below. */
export function table(title: string, rows: ReadonlyArray<readonly [string, string]>): string {
  const left = Math.max(...rows.map(([label]) => label.length));
  const right = Math.max(...rows.map(([, value]) => value.length));
  const rule = '-'.repeat(left + right + 3);
  return [title, rule, ...rows.map(([label, value]) => `${label.padEnd(left)} | ${value}`), rule].join('\n');
}
