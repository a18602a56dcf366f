export { percentile } from '../harness/stats';

/** Milliseconds as a person reads them: 850 ms, 4.2 s, 2 min 5 s. */
export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  // Rounded to the second first, so that 4 min 59.6 s reads 5 min 0 s, not 4 min 60 s.
  const seconds = Math.round(ms / 1_000);
  return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
}

/** Rows of [label, value] as a two-column table with a rule above and below. */
export function table(title: string, rows: ReadonlyArray<readonly [string, string]>): string {
  const left = Math.max(...rows.map(([label]) => label.length));
  const right = Math.max(...rows.map(([, value]) => value.length));
  const rule = '-'.repeat(left + right + 3);
  return [title, rule, ...rows.map(([label, value]) => `${label.padEnd(left)} | ${value}`), rule].join('\n');
}
