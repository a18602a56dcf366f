import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Reasons, ScaleSetConditionTypes, ScaleSetReasons } from '../libs/api/src';

/**
 * docs/reference.md against the source, so the reference cannot drift: the metrics it lists are exactly
 * the ones the controller and the listener define (a metric added without a line here fails, and so
 * does a line for a metric that is gone), and every condition type and reason the scale-set
 * controllers and the EphemeralRunner controller can write is on the page.
 */
const root = resolve(__dirname, '..');
const page = readFileSync(join(root, 'docs', 'reference.md'), 'utf8');

function sourceFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) files.push(...sourceFiles(path));
    else if (entry.endsWith('.ts') && !entry.endsWith('.spec.ts')) files.push(path);
  }
  return files;
}

const METRIC = /(?:gha|aro|controller_runtime|workqueue|leader_election|actions|rest_client)_[a-z0-9_]+/;

/** Metric names as string literals of the apps' and libs' code (a name is always written whole). */
function definedMetrics(): Set<string> {
  const names = new Set<string>();
  for (const file of [...sourceFiles(join(root, 'apps')), ...sourceFiles(join(root, 'libs'))]) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(new RegExp(`['"\`](${METRIC.source})['"\`]`, 'g'))) names.add(m[1]);
  }
  return names;
}

/** Metric names in the first column of the page's metric tables (`a`, `b` in one cell count each). */
function listedMetrics(): Set<string> {
  const section = page.slice(page.indexOf('## Metrics'), page.indexOf('## Conditions'));
  const names = new Set<string>();
  for (const line of section.split('\n')) {
    const first = /^\|([^|]*)\|/.exec(line)?.[1] ?? '';
    for (const m of first.matchAll(new RegExp(`\`(${METRIC.source})\``, 'g'))) names.add(m[1]);
  }
  return names;
}

function mentioned(word: string): boolean {
  return new RegExp(`\`${word}\``).test(page);
}

describe('docs/reference.md', () => {
  it('lists every metric the controller and the listener define, and no other', () => {
    const defined = definedMetrics();
    // A fixture name of the metrics registry's own spec helpers, not a metric ARO serves.
    defined.delete('aro_test_total');
    const listed = listedMetrics();
    expect(defined.size).toBeGreaterThan(40);
    expect([...defined].filter((n) => !listed.has(n)).sort()).toEqual([]);
    expect([...listed].filter((n) => !defined.has(n)).sort()).toEqual([]);
  });

  it('names every condition type and reason of the scale-set controllers', () => {
    const words = [...Object.values(ScaleSetConditionTypes), ...Object.values(ScaleSetReasons)];
    expect(words.filter((w) => !mentioned(w))).toEqual([]);
  });

  it("names every EphemeralRunner failure reason, and only reasons the controllers' code writes", () => {
    expect(Object.values(Reasons).filter((w) => !mentioned(w))).toEqual([]);
    const section = page.slice(page.indexOf('## Events on an EphemeralRunner'), page.indexOf('## Labels'));
    const reasons = [...section.matchAll(/^\| `([A-Za-z]+)`(?:, `([A-Za-z]+)`)*(?:, `([A-Za-z]+)`)?/gm)]
      .flatMap((m) => m.slice(1))
      .filter((r): r is string => Boolean(r));
    const code = sourceFiles(join(root, 'libs'))
      .map((f) => readFileSync(f, 'utf8'))
      .join('\n');
    // The phase transitions are written as `Runner${phase}` (status-writer.ts); the rest whole.
    const written = (r: string): boolean =>
      code.includes(`'${r}'`) ||
      (/^Runner(Pending|Running|Succeeded)$/.test(r) && code.includes('`Runner${'));
    expect(reasons.length).toBeGreaterThan(10);
    expect(reasons.filter((r) => !written(r))).toEqual([]);
  });
});
