import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

const root = resolve(__dirname, '..', '..', '..');

function runController(env: NodeJS.ProcessEnv) {
  return spawnSync(process.execPath, ['-r', '@swc-node/register', 'apps/controller/src/main.ts'], {
    cwd: root,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
}

describe('the controller process', () => {
  it('refuses to start on an invalid option, naming it, with exit code 2', () => {
    const result = runController({ LOG_LEVEL: 'verbose', MAX_CONCURRENT_RECONCILES: '0' });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('invalid controller configuration');
    expect(result.stderr).toContain('LOG_LEVEL');
    expect(result.stderr).toContain('MAX_CONCURRENT_RECONCILES');
  }, 60_000);

  it('reports the Node.js it runs on in its first log line, and that is Node 24', () => {
    // A kubeconfig that does not exist stops the start right after the first line; the line is what counts.
    const result = runController({ KUBECONFIG: resolve(root, 'no-such-kubeconfig'), LOG_FORMAT: 'json' });
    const first = result.stdout.split('\n').find((line) => line.includes('aro-controller starting'));
    expect(first).toBeDefined();
    const node = (JSON.parse(first ?? '{}') as { node?: string }).node ?? '';
    expect(node).toBe(process.version);
    expect(Number(/^v(\d+)\./.exec(node)?.[1])).toBeGreaterThanOrEqual(24);
  }, 60_000);

  it("logs JSON with upstream's keys by default: severity, ts, message, each once", () => {
    const env = { KUBECONFIG: resolve(root, 'no-such-kubeconfig'), LOG_FORMAT: undefined, LOG_LEVEL: '0' };
    const result = runController(env);
    const first = result.stdout.split('\n').find((line) => line.includes('aro-controller starting')) ?? '{}';
    const record = JSON.parse(first) as Record<string, unknown>;
    expect(record).toMatchObject({ severity: 'info', message: 'aro-controller starting' });
    expect(record.ts).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    for (const key of ['severity', 'ts', 'message']) expect(first.split(`"${key}":`)).toHaveLength(2);
    expect(record).not.toHaveProperty('level');
    expect(record).not.toHaveProperty('msg');
    expect(record).not.toHaveProperty('time');
  }, 60_000);

  it('refuses to start when an extension cannot be found, naming it, with exit code 2', () => {
    const result = runController({ ARO_EXTENSIONS: './no-such-extension,@example/not-installed' });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('extension ./no-such-extension: not found');
  }, 60_000);

  it('refuses to start when an extension throws as it loads, naming it, with exit code 2', () => {
    const result = runController({
      ARO_EXTENSIONS: './apps/controller/src/testing/throwing-extension.module',
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(
      'extension ./apps/controller/src/testing/throwing-extension.module: failed to load: the vault address is not configured',
    );
  }, 60_000);

  it('refuses to start when a provider of an extension throws, naming the extension, with exit code 2', () => {
    const result = runController({
      ARO_EXTENSIONS: './apps/controller/src/testing/provider-throws.module',
      // A kubeconfig that loads, so that the app gets as far as building the extension's provider.
      KUBECONFIG: resolve(root, 'apps/controller/src/testing/unreachable.kubeconfig'),
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('extension ./apps/controller/src/testing/provider-throws.module');
    expect(result.stderr).toContain('cannot reach the inventory service');
  }, 60_000);
});
