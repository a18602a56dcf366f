import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type * as https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { LeanKubeConfig, jsonKubeConfigFile, loadKubeConfigSource } from './kubeconfig';

// Every folder this file makes, removed after it: a test leaves the machine as it found it.
const made: string[] = [];
afterAll(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function writeConfig(config: object | string): string {
  const dir = mkdtempSync(join(tmpdir(), 'aro-kubeconfig-'));
  made.push(dir);
  const path = join(dir, 'kubeconfig');
  writeFileSync(path, typeof config === 'string' ? config : JSON.stringify(config));
  return path;
}

const b64 = (s: string) => Buffer.from(s).toString('base64');

function config(user: object, cluster: object = {}): object {
  return {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'c',
        cluster: { server: 'https://10.0.0.1:6443', 'certificate-authority-data': b64('CA'), ...cluster },
      },
    ],
    users: [{ name: 'u', user }],
    contexts: [{ name: 'ctx', context: { cluster: 'c', user: 'u', namespace: 'ns' } }],
    'current-context': 'ctx',
  };
}

async function options(kc: { applyToHTTPSOptions(o: https.RequestOptions): Promise<void> }) {
  const opts: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(opts);
  return opts;
}

describe('LeanKubeConfig', () => {
  it('reads a JSON kubeconfig with a client certificate as client-node does', async () => {
    const path = writeConfig(
      config({ 'client-certificate-data': b64('CERT'), 'client-key-data': b64('KEY') }),
    );
    const lean = jsonKubeConfigFile(path);
    expect(lean).toBeInstanceOf(LeanKubeConfig);
    const reference = new KubeConfig();
    reference.loadFromFile(path);
    expect(lean!.getCurrentContext()).toBe(reference.getCurrentContext());
    expect(lean!.getCurrentCluster()?.server).toBe(reference.getCurrentCluster()?.server);
    const mine = await options(lean!);
    const theirs = await options(reference);
    expect(String(mine.ca)).toBe('CA');
    expect(String(mine.cert)).toBe(String(theirs.cert));
    expect(String(mine.key)).toBe(String(theirs.key));
  });

  it('sends a bearer token, and basic credentials when there is no token', async () => {
    const withToken = jsonKubeConfigFile(writeConfig(config({ token: 'abc' })))!;
    expect((await options(withToken)).headers).toEqual({ Authorization: 'Bearer abc' });
    const basic = jsonKubeConfigFile(writeConfig(config({ username: 'me', password: 'pw' })))!;
    expect((await options(basic)).headers).toEqual({ Authorization: `Basic ${b64('me:pw')}` });
  });

  it('resolves relative file paths against the kubeconfig file, and skips TLS verification only when asked', async () => {
    const path = writeConfig(
      config({}, { 'certificate-authority-data': undefined, 'insecure-skip-tls-verify': true }),
    );
    writeFileSync(join(path, '..', 'token'), 'from-file\n');
    const lean = jsonKubeConfigFile(
      writeConfig(config({ tokenFile: join(path, '..', 'token') }, { 'insecure-skip-tls-verify': true })),
    )!;
    const opts = await options(lean);
    expect(opts.rejectUnauthorized).toBe(false);
    expect(opts.headers).toEqual({ Authorization: 'Bearer from-file' });
    const relative = jsonKubeConfigFile(
      writeConfig(config({ 'client-certificate': 'cert.pem', 'client-key': 'key.pem' })),
    )!;
    expect(relative.getCurrentUser()?.certFile).toMatch(/aro-kubeconfig-.*\/cert\.pem$/);
  });

  it('leaves YAML files, exec plugins, auth providers and proxies to client-node', async () => {
    expect(jsonKubeConfigFile(writeConfig('apiVersion: v1\nkind: Config\n'))).toBeUndefined();
    expect(jsonKubeConfigFile(writeConfig(config({ exec: { command: 'aws' } })))).toBeUndefined();
    expect(jsonKubeConfigFile(writeConfig(config({ 'auth-provider': { name: 'oidc' } })))).toBeUndefined();
    expect(
      jsonKubeConfigFile(writeConfig(config({ token: 't' }, { 'proxy-url': 'http://proxy:3128' }))),
    ).toBeUndefined();
    const yaml = writeConfig(
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters: [{name: c, cluster: {server: "https://10.0.0.2:6443"}}]',
        'users: [{name: u, user: {token: t}}]',
        'contexts: [{name: ctx, context: {cluster: c, user: u}}]',
        'current-context: ctx',
      ].join('\n'),
    );
    const loaded = await loadKubeConfigSource(yaml);
    expect(loaded).toBeInstanceOf(KubeConfig);
    expect(loaded.getCurrentCluster()?.server).toBe('https://10.0.0.2:6443');
  });
});
