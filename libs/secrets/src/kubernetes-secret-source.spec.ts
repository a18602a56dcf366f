import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '@aro/kube';
import type { GitHubConfigHolder } from './config-holder';
import { SecretResolutionError } from './errors';
import { KubernetesSecretSource } from './kubernetes-secret-source';

/**
 * An API server that holds no Secrets: every read answers 404 with the Status the real one sends, so
 * the error travels the whole way (client, NotFound check, the source's own error) as in a cluster.
 */
async function emptyApiServer(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const match = /^\/api\/v1\/namespaces\/([^/]+)\/secrets\/([^/?]+)/.exec(req.url ?? '');
    res.writeHead(404, { 'Content-Type': 'application/json' });
    res.end(
      JSON.stringify({
        kind: 'Status',
        apiVersion: 'v1',
        status: 'Failure',
        reason: 'NotFound',
        code: 404,
        message: match
          ? `secrets "${match[2]}" not found`
          : 'the server could not find the requested resource',
        details: match ? { name: match[2], kind: 'secrets' } : undefined,
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('KubernetesSecretSource', () => {
  let server: { url: string; close(): Promise<void> };
  let kube: KubeClient;
  let source: KubernetesSecretSource;
  const holder: GitHubConfigHolder = {
    namespace: 'team-a',
    githubConfigUrl: 'https://github.com/org',
    githubConfigSecret: 'gh-app',
    name: 'EphemeralRunner r-1',
  };

  beforeEach(async () => {
    server = await emptyApiServer();
    const kc = new KubeConfig();
    kc.loadFromClusterAndUser({ name: 'empty', server: server.url, skipTLSVerify: true }, { name: 'u' });
    kube = new KubeClient(kc, { requestTimeoutMs: 2_000 });
    source = new KubernetesSecretSource(kube);
  });

  afterEach(async () => {
    kube.close();
    await server.close();
  });

  it('names the namespace, the Secret and the object that refers to it when the GitHub config Secret is missing', async () => {
    const err = await source.getCredentials(holder).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SecretResolutionError);
    expect(err).toMatchObject({ reason: 'SecretNotFound', namespace: 'team-a', secretName: 'gh-app' });
    expect((err as Error).message).toBe(
      'Secret team-a/gh-app: GitHub config Secret not found (referenced by EphemeralRunner r-1)',
    );
  });

  it('names the namespace and the Secret when a proxy credential Secret is missing', async () => {
    const err = await source.getProxyCredentials(holder, 'proxy-creds').catch((e: unknown) => e);
    expect(err).toMatchObject({ reason: 'SecretNotFound', namespace: 'team-a', secretName: 'proxy-creds' });
    expect((err as Error).message).toBe(
      'Secret team-a/proxy-creds: proxy credential Secret not found (referenced by EphemeralRunner r-1)',
    );
  });
});
