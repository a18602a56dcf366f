import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

describe('the controller process', () => {
  it('refuses to start on an invalid option, naming it, with exit code 2', () => {
    const root = resolve(__dirname, '..', '..', '..');
    const result = spawnSync(process.execPath, ['-r', '@swc-node/register', 'apps/controller/src/main.ts'], {
      cwd: root,
      env: { ...process.env, LOG_LEVEL: 'verbose', MAX_CONCURRENT_RECONCILES: '0' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('invalid controller configuration');
    expect(result.stderr).toContain('LOG_LEVEL');
    expect(result.stderr).toContain('MAX_CONCURRENT_RECONCILES');
  }, 60_000);
});
