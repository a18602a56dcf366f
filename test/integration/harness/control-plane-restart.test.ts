import { ConfigMapKind, Informer, KubeClient, type InformerEvent } from '@aro/kube';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { ControlPlane, processExists, waitFor } from '../../harness';

jest.setTimeout(300_000);

/*
 * The chaos runner's `restart-apiserver` and `restart-etcd` faults rest on this: a member of the
 * control plane killed and started again on the same data, ports and certificates, so that a client
 * made before (the product's KubeClient and an informer watching) reaches the same address and finds
 * what it left. A separate control plane: the suite's own must not go down under other tests.
 */
describe('a control plane whose apiserver and etcd are restarted', () => {
  let plane: ControlPlane;
  let client: KubeClient;
  let informer: Informer<V1ConfigMap>;
  const events: string[] = [];

  beforeAll(async () => {
    plane = await ControlPlane.start({ log: () => undefined });
    client = new KubeClient(plane.kubeConfig(), { requestTimeoutMs: 5_000 });
    informer = new Informer<V1ConfigMap>(client, ConfigMapKind, {
      namespace: 'default',
      registry: new Registry(),
      backoff: { initialMs: 100, maxMs: 1_000 },
    });
    informer.addEventHandler((e: InformerEvent<V1ConfigMap>) =>
      events.push(`${e.type} ${e.object.metadata?.name}`),
    );
    await informer.start();
    await informer.waitForSync(AbortSignal.timeout(30_000));
  });

  afterAll(async () => {
    await informer?.stop();
    client?.close();
    await plane?.stop();
  });

  const create = (name: string): Promise<V1ConfigMap> =>
    client.create<V1ConfigMap>(ConfigMapKind, { metadata: { name, namespace: 'default' }, data: { name } });

  it('serves again at the same address with the same data, and a watching client catches up', async () => {
    await create('before');
    await waitFor(() => events.includes('added before'), { description: 'the informer to see "before"' });

    // kube-apiserver crashes: every connection breaks, every watch ends.
    const apiserverBefore = plane.info.pids.kubeApiserver;
    await plane.kill('kube-apiserver', 'SIGKILL');
    expect(processExists(apiserverBefore)).toBe(false);
    await expect(client.get<V1ConfigMap>(ConfigMapKind, 'default', 'before')).rejects.toThrow();
    const apiserverAfter = await plane.startAgain('kube-apiserver');
    expect(apiserverAfter).not.toBe(apiserverBefore);
    expect(plane.info.pids.kubeApiserver).toBe(apiserverAfter);
    // The same client, made before the restart: same address, same certificates, the data kept.
    expect((await client.get<V1ConfigMap>(ConfigMapKind, 'default', 'before')).data).toEqual({
      name: 'before',
    });
    await create('after-apiserver');
    await waitFor(() => events.includes('added after-apiserver'), {
      description: 'the informer to see a ConfigMap made after the apiserver came back',
      timeoutMs: 60_000,
    });

    // etcd stops gracefully under a running apiserver, which must reconnect once it is back.
    const etcdBefore = plane.info.pids.etcd;
    await plane.kill('etcd', 'SIGTERM');
    expect(processExists(etcdBefore)).toBe(false);
    expect(await plane.startAgain('etcd')).not.toBe(etcdBefore);
    await waitFor(
      () =>
        create('after-etcd').then(
          () => true,
          () => false,
        ),
      { description: 'the apiserver to write through the restarted etcd', timeoutMs: 60_000 },
    );
    await waitFor(() => events.includes('added after-etcd'), {
      description: 'the informer to see a ConfigMap made after etcd came back',
      timeoutMs: 60_000,
    });
    expect(informer.get('default', 'before')?.data).toEqual({ name: 'before' });
    // Nothing was seen twice or lost: the objects the informer holds are exactly those made.
    expect(
      informer
        .list()
        .map((c) => c.metadata?.name)
        .filter((n) => n !== 'kube-root-ca.crt')
        .sort(),
    ).toEqual(['after-apiserver', 'after-etcd', 'before']);
  });

  it('leaves no process behind once stopped, the restarted ones included', async () => {
    const pids = [...plane.pidsEver];
    expect(pids.length).toBe(6); // etcd, apiserver, kcm, the reaper, and the two restarted
    await plane.stop();
    expect(pids.filter(processExists)).toEqual([]);
    await expect(plane.startAgain('etcd')).rejects.toThrow(/stopping/);
  });
});
