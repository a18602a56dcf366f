import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const root = resolve(__dirname, '..', '..', '..');

/**
 * The modules the per-pod listener process has loaded once main.ts's imports are done: the process is
 * started for real (from source) with a config that does not exist, so it exits 2 right after its
 * static imports, and a preloaded hook writes require's cache on exit.
 */
function modulesLoadedByMain(): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'aro-listener-modules-'));
  try {
    const out = join(dir, 'modules.json');
    const hook = join(dir, 'dump-modules.js');
    writeFileSync(
      hook,
      `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(out)}, JSON.stringify(Object.keys(require.cache))));\n`,
    );
    const result = spawnSync(
      process.execPath,
      ['-r', '@swc-node/register', '-r', hook, 'apps/listener/src/main.ts'],
      {
        cwd: root,
        env: { ...process.env, LISTENER_MODE: '', LISTENER_CONFIG_PATH: join(dir, 'no-config.json') },
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    expect(result.status).toBe(2);
    return JSON.parse(readFileSync(out, 'utf8')) as string[];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the per-pod listener process', () => {
  // One listener pod per scale set: whatever the controller needs and the listener does not is paid
  // for in every pod (docs/performance.md, "The listener"). Nest and rxjs come with any barrel that
  // exports a Nest module, client-node with the full kubeconfig loader.
  it('loads neither Nest, rxjs, @kubernetes/client-node nor undici', () => {
    const loaded = modulesLoadedByMain();
    // The hook saw the real graph: the listener's own modules and its HTTP client are there.
    expect(loaded.some((f) => f.endsWith(join('apps', 'listener', 'src', 'scale-set-listener.ts')))).toBe(
      true,
    );
    expect(loaded.some((f) => f.endsWith(join('libs', 'actions', 'src', 'transport.ts')))).toBe(true);
    const heavy = loaded.filter((f) =>
      /node_modules[\\/](@nestjs[\\/]|rxjs[\\/]|reflect-metadata[\\/]|@kubernetes[\\/]client-node[\\/])/.test(
        f,
      ),
    );
    expect(heavy).toEqual([]);
    // The Actions client is on Node's own http/https: undici's parts alone cost ~13 MiB of RSS.
    expect(loaded.filter((f) => /node_modules[\\/]undici[\\/]/.test(f))).toEqual([]);
  }, 60_000);
});
