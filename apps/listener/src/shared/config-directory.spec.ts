import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createLogger } from '@aro/observability';
import { ConfigDirectory } from './config-directory';

const config = (id: number) => ({
  configure_url: 'https://github.com/octo',
  github_token: `ghp_${id}`,
  ephemeral_runner_set_namespace: 'ns',
  ephemeral_runner_set_name: `set-${id}`,
  min_runners: 0,
  max_runners: 2,
  runner_scale_set_id: id,
});

describe('ConfigDirectory', () => {
  let dir: string;
  let lines: string[];
  let directory: ConfigDirectory;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'aro-config-dir-'));
    lines = [];
    const destination = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString('utf8'));
        done();
      },
    });
    directory = new ConfigDirectory(dir, createLogger({ level: 'info', destination }));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reads <key>.json and <key>/config.json, each with its own credentials', () => {
    writeFileSync(join(dir, 'a.json'), JSON.stringify(config(1)));
    mkdirSync(join(dir, 'b'));
    writeFileSync(join(dir, 'b', 'config.json'), JSON.stringify(config(2)));
    const read = directory.readNow();
    expect([...read.keys()]).toEqual(['a', 'b']);
    expect(read.get('a')?.credentials).toEqual({ kind: 'pat', token: 'ghp_1' });
    expect(read.get('b')?.scaleSetId).toBe(2);
  });

  it('skips a config that does not validate, naming the file and field once, and serves the rest', () => {
    writeFileSync(join(dir, 'good.json'), JSON.stringify(config(1)));
    writeFileSync(join(dir, 'bad.json'), JSON.stringify({ ...config(2), min_runners: 5 }));
    expect([...directory.readNow().keys()]).toEqual(['good']);
    expect([...directory.readNow().keys()]).toEqual(['good']);
    const reports = lines.filter((l) => l.includes('bad.json'));
    expect(reports).toHaveLength(1);
    expect(reports[0]).toContain('min_runners');
  });
});
