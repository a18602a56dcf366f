import { Writable } from 'node:stream';
import type { V1Secret } from '@kubernetes/client-node';
import { KubeApiError, SecretKind } from '@aro/kube';
import { createLogger } from '@aro/observability';
import { ConfigSecret, parseSecretRef } from './config-secret';

const config = (id: number) => ({
  configure_url: 'https://github.com/octo',
  github_token: `ghp_${id}`,
  ephemeral_runner_set_namespace: 'ns',
  ephemeral_runner_set_name: `set-${id}`,
  min_runners: 0,
  max_runners: 2,
  runner_scale_set_id: id,
});
const b64 = (value: unknown) =>
  Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64');

describe('ConfigSecret', () => {
  let lines: string[];
  let answer: () => V1Secret;
  const source = () => {
    const destination = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString('utf8'));
        done();
      },
    });
    const kube = { get: <T>() => Promise.resolve(answer() as T) };
    return new ConfigSecret(kube, 'arc-systems', 'configs', createLogger({ level: 'info', destination }));
  };
  beforeEach(() => {
    lines = [];
  });

  it('serves each <key>.json of the Secret with its own credentials; a bad key is skipped, told once', async () => {
    answer = () => ({
      data: {
        'a-listener.json': b64(config(1)),
        'b-listener.json': b64({ ...config(2), github_token: undefined, min_runners: 3 }),
        'c-listener.json': b64(config(3)),
        'notes.txt': b64('not a config'),
      },
    });
    const secret = source();
    const read = await secret.read();
    expect([...read.keys()]).toEqual(['a-listener', 'c-listener']);
    expect(read.get('c-listener')?.credentials).toEqual({ kind: 'pat', token: 'ghp_3' });
    await secret.read();
    const told = lines.filter((l) => l.includes('b-listener.json'));
    expect(told).toHaveLength(1);
    expect(told[0]).toContain('Secret arc-systems/configs key b-listener.json');
  });

  it('serves nothing while the Secret does not exist, and throws on any other failure', async () => {
    const notFound = new KubeApiError(404, {
      verb: 'get',
      kind: SecretKind,
      namespace: 'arc-systems',
      name: 'configs',
    });
    answer = () => {
      throw notFound;
    };
    expect((await source().read()).size).toBe(0);
    const forbidden = new KubeApiError(403, {
      verb: 'get',
      kind: SecretKind,
      namespace: 'arc-systems',
      name: 'configs',
    });
    answer = () => {
      throw forbidden;
    };
    await expect(source().read()).rejects.toThrow(/403/);
  });

  it('takes LISTENER_CONFIG_SECRET as <namespace>/<name> only', () => {
    expect(parseSecretRef('arc-systems/arc-shared-listener-configs')).toEqual({
      namespace: 'arc-systems',
      name: 'arc-shared-listener-configs',
    });
    expect(parseSecretRef('configs')).toBeUndefined();
    expect(parseSecretRef('a/b/c')).toBeUndefined();
  });
});
