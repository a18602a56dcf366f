import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * The controller's entrypoint (image/bin/aro-controller) turns the chart's `heapLimitMiB`
 * (ARO_HEAP_LIMIT_MIB) into V8's old-space limit. Run here with ARO_HOME pointing at a stand-in app
 * that prints the heap limit V8 was given, so the test sees the flag as node applied it.
 */
const ENTRYPOINT = resolve(__dirname, '..', '..', '..', 'image', 'bin', 'aro-controller');

describe('The controller entrypoint', () => {
  let home: string;
  beforeAll(() => {
    home = mkdtempSync(join(tmpdir(), 'aro-entrypoint-'));
    const main = join(home, 'dist', 'apps', 'controller', 'apps', 'controller', 'src');
    mkdirSync(main, { recursive: true });
    writeFileSync(
      join(main, 'main.js'),
      "console.log(JSON.stringify({ heapLimit: require('node:v8').getHeapStatistics().heap_size_limit }));\n",
    );
  });
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  function heapLimitMiB(env: Record<string, string>): number {
    const run = spawnSync('sh', [ENTRYPOINT], {
      env: { PATH: process.env.PATH ?? '', ARO_HOME: home, ...env },
      encoding: 'utf8',
    });
    expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
    return (JSON.parse(run.stdout) as { heapLimit: number }).heapLimit / 1024 / 1024;
  }

  it('caps the old space at ARO_HEAP_LIMIT_MIB, and leaves Node its default without it', () => {
    // The limit V8 reports adds the young generation (1 MiB semi-spaces) to the old space.
    const capped = heapLimitMiB({ ARO_HEAP_LIMIT_MIB: '96' });
    expect(capped).toBeGreaterThanOrEqual(96);
    expect(capped).toBeLessThan(104);
    expect(heapLimitMiB({ ARO_HEAP_LIMIT_MIB: '384' })).toBeGreaterThanOrEqual(384);
    expect(heapLimitMiB({})).not.toBeCloseTo(capped, 0);
  });
});
