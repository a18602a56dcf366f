import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const root = resolve(__dirname, '..', '..', '..');

function runListener(env: NodeJS.ProcessEnv) {
  return spawnSync(process.execPath, ['-r', '@swc-node/register', 'apps/listener/src/main.ts'], {
    cwd: root,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
}

describe('the listener process', () => {
  it('refuses a bad config with exit code 2 and a message naming the field', () => {
    const dir = mkdtempSync(join(tmpdir(), 'aro-listener-config-'));
    try {
      const path = join(dir, 'config.json');
      writeFileSync(
        path,
        JSON.stringify({
          configure_url: 'https://github.com/octo',
          github_token: 'ghp_x',
          ephemeral_runner_set_namespace: 'ns',
          ephemeral_runner_set_name: 'set',
          min_runners: 3,
          max_runners: 2,
          runner_scale_set_id: 0,
        }),
      );
      const result = runListener({ LISTENER_CONFIG_PATH: path });
      expect(result.status).toBe(2);
      expect(result.stderr).toContain('invalid listener configuration');
      expect(result.stderr).toContain('runner_scale_set_id');
      expect(result.stderr).toContain('min_runners');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('exits 2 naming the file when there is no config to read', () => {
    const result = runListener({ LISTENER_CONFIG_PATH: join(tmpdir(), 'no-such-listener-config.json') });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('no-such-listener-config.json');
  }, 60_000);
});
