import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1ServiceAccount } from '@kubernetes/client-node';
import { KubeClient, ServiceAccountKind } from '@aro/kube';
import { createTestNamespace, testKubeConfig } from '../../harness';
import { identityOf, serviceAccountUid, writeServiceAccountKubeconfig } from '../../sandbox/identities';

/*
 * Who the sandbox's listener runs as. It used to be a client certificate whose CN was the account's
 * user name, which openssl refuses past 64 characters: a scale set named as the chart allows (45
 * characters; upstream's quickstart `arc-runner-set` already gave 67) never got a listener. The
 * account below is the listener's for the longest name: `<45 characters>-<hash>-listener`.
 */
describe('the sandbox identities', () => {
  const kube = new KubeClient(testKubeConfig());
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'aro-sandbox-identities-'));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
    kube.close();
  });

  it('runs a process as a service account whose user name is far past 64 characters', async () => {
    const namespace = await createTestNamespace('ids');
    const account = `${'arc-runner-set-'.padEnd(45, 'x')}-1a2b3c4d-listener`;
    await kube.create<V1ServiceAccount>(ServiceAccountKind, { metadata: { name: account, namespace } });
    const user = `system:serviceaccount:${namespace}:${account}`;
    expect(user.length).toBeGreaterThan(64);

    const path = await writeServiceAccountKubeconfig(testKubeConfig(), namespace, account, join(dir, 'kc'));
    expect(await identityOf(path)).toEqual({ user, mayCreateNamespaces: false });
  });

  it('gives a token bound to the account: once it is made again under its name, the old one is refused', async () => {
    const namespace = await createTestNamespace('ids');
    await kube.create<V1ServiceAccount>(ServiceAccountKind, { metadata: { name: 'again', namespace } });
    const first = await serviceAccountUid(testKubeConfig(), namespace, 'again');
    const old = await writeServiceAccountKubeconfig(testKubeConfig(), namespace, 'again', join(dir, 'old'));
    await kube.delete(ServiceAccountKind, namespace, 'again');
    await kube.create<V1ServiceAccount>(ServiceAccountKind, { metadata: { name: 'again', namespace } });
    const second = await serviceAccountUid(testKubeConfig(), namespace, 'again');
    expect(second).toBeDefined();
    expect(second).not.toBe(first);
    await expect(identityOf(old)).rejects.toThrow(/401|Unauthorized/);
    const fresh = await writeServiceAccountKubeconfig(testKubeConfig(), namespace, 'again', join(dir, 'new'));
    expect((await identityOf(fresh)).user).toBe(`system:serviceaccount:${namespace}:again`);
  });
});
