import { EphemeralRunnerKind, type EphemeralRunner } from '@aro/api';
import {
  CONTROLLING_OWNER_INDEX,
  ConfigMapKind,
  EventKind,
  Informer,
  InformerCache,
  KubeClient,
  PodKind,
  SecretKind,
  controllingOwnerKey,
  isNotFound,
  type InformerEvent,
} from '@aro/kube';
import type { CoreV1Event, V1ConfigMap, V1Pod, V1Secret } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { createTestNamespace, kubeConfigForUser, testKubeConfig, waitFor } from '../../harness';
import { ApiProxy } from './api-proxy';
import { compactEtcd } from './etcd';

jest.setTimeout(120_000);

function configMap(namespace: string, name: string, value: string): V1ConfigMap {
  return { metadata: { name, namespace, labels: { suite: 'informer' } }, data: { value } };
}

function summary(events: InformerEvent<V1ConfigMap>[]): string[] {
  return events.map(
    (e) => `${e.type} ${e.object.metadata?.name}${e.type === 'deleted' ? '' : `=${e.object.data?.value}`}`,
  );
}

async function metric(registry: Registry, name: string, labels: string): Promise<number> {
  const text = await registry.getSingleMetricAsString(name);
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
  return line ? Number(line.split(' ').pop()) : 0;
}

describe('Informer against the API server', () => {
  let client: KubeClient;
  let ns: string;
  let registry: Registry;
  let informer: Informer<V1ConfigMap> | undefined;
  let proxy: ApiProxy | undefined;
  let proxiedClient: KubeClient | undefined;
  let events: InformerEvent<V1ConfigMap>[];
  let stopAfter: Informer<CoreV1Event> | undefined;

  beforeAll(() => {
    client = new KubeClient(testKubeConfig());
  });

  afterAll(() => client.close());

  beforeEach(async () => {
    ns = await createTestNamespace('informer');
    registry = new Registry();
    events = [];
  });

  afterEach(async () => {
    await informer?.stop();
    informer = undefined;
    await stopAfter?.stop();
    stopAfter = undefined;
    proxiedClient?.close();
    proxiedClient = undefined;
    await proxy?.close();
    proxy = undefined;
  });

  async function startProxy(): Promise<KubeClient> {
    proxy = new ApiProxy(testKubeConfig());
    await proxy.start();
    proxiedClient = new KubeClient(proxy.kubeConfig(), { requestTimeoutMs: 5_000 });
    return proxiedClient;
  }

  async function startInformer(
    through: KubeClient,
    opts: ConstructorParameters<typeof Informer>[2] = {},
  ): Promise<Informer<V1ConfigMap>> {
    informer = new Informer<V1ConfigMap>(through, ConfigMapKind, {
      namespace: ns,
      registry,
      backoff: { initialMs: 100, maxMs: 500 },
      ...opts,
    });
    informer.addEventHandler((e) => events.push(e));
    await informer.start();
    await informer.waitForSync(AbortSignal.timeout(30_000));
    return informer;
  }

  const seen = (expected: string[], description: string) =>
    waitFor(() => expected.every((e) => summary(events).includes(e)), { description, timeoutMs: 30_000 });

  it('sees creates, updates and deletes', async () => {
    await client.create(ConfigMapKind, configMap(ns, 'before', '1'));
    const inf = await startInformer(client);
    expect(summary(events)).toEqual(['added before=1']);

    await client.create(ConfigMapKind, configMap(ns, 'a', '1'));
    await client.mergePatch(ConfigMapKind, ns, 'a', { data: { value: '2' } });
    await client.delete(ConfigMapKind, ns, 'before');
    await seen(['added a=1', 'modified a=2', 'deleted before'], 'the create, update and delete');
    expect(inf.get(ns, 'a')?.data).toEqual({ value: '2' });
    expect(inf.get(ns, 'before')).toBeUndefined();
    const modified = events.find((e) => e.type === 'modified');
    expect(modified?.oldObject?.data).toEqual({ value: '1' });
  });

  it('survives watches the server closes, continuing without a relist', async () => {
    await startInformer(client, { watchTimeoutSeconds: 1 });
    for (let i = 1; i <= 4; i++) {
      await client.create(ConfigMapKind, configMap(ns, `c${i}`, String(i)));
      const watchesBefore = await metric(registry, 'aro_informer_watch_restarts_total', 'reason="closed"');
      // Let the server end at least one watch between two writes.
      await waitFor(
        async () =>
          (await metric(registry, 'aro_informer_watch_restarts_total', 'reason="closed"')) > watchesBefore,
        { description: 'the server to close the watch', timeoutMs: 10_000 },
      );
    }
    await seen(['added c1=1', 'added c2=2', 'added c3=3', 'added c4=4'], 'all four creates');
    expect(await metric(registry, 'aro_informer_lists_total', `scope="${ns}"`)).toBe(1);
  });

  it('relists after a 410 Gone and reports what changed while it was away', async () => {
    // Core Events are the kind the API server keeps no watch cache for, so a watch reaches etcd, and etcd
    // answers a compacted resourceVersion with the real 410.
    const event = (name: string, message: string): CoreV1Event => ({
      metadata: { name, namespace: ns },
      involvedObject: { kind: 'Pod', name: 'p', namespace: ns },
      reason: 'Test',
      message,
      type: 'Normal',
    });
    const seenEvents: string[] = [];
    const through = await startProxy();
    await client.create(EventKind, event('kept', '1'));
    await client.create(EventKind, event('doomed', '1'));
    const inf = new Informer<CoreV1Event>(through, EventKind, {
      namespace: ns,
      registry,
      backoff: { initialMs: 100, maxMs: 500 },
    });
    stopAfter = inf;
    inf.addEventHandler((e) => seenEvents.push(`${e.type} ${e.object.metadata?.name}=${e.object.message}`));
    await inf.start();
    await inf.waitForSync(AbortSignal.timeout(30_000));
    await waitFor(() => proxy!.watchRequests().length === 1, { description: 'the first watch' });
    seenEvents.length = 0;

    await proxy!.down();
    await client.mergePatch(EventKind, ns, 'kept', { message: '2' });
    await client.delete(EventKind, ns, 'doomed');
    await client.create(EventKind, event('new', '1'));
    await compactEtcd();
    await proxy!.up();

    const expected = ['modified kept=2', 'deleted doomed=1', 'added new=1'];
    await waitFor(() => expected.every((e) => seenEvents.includes(e)), {
      description: 'the changes recovered by the relist',
    });
    expect(await metric(registry, 'aro_informer_watch_restarts_total', 'reason="gone"')).toBe(1);
    expect(await metric(registry, 'aro_informer_lists_total', `scope="${ns}"`)).toBe(2);
    expect(
      inf
        .list()
        .map((c) => c.metadata?.name)
        .sort(),
    ).toEqual(['kept', 'new']);

    // And it watches again afterwards.
    await client.create(EventKind, event('after', '1'));
    await waitFor(() => seenEvents.includes('added after=1'), { description: 'a create after the relist' });
  });

  it('survives the API server being unreachable for a while, and is unhealthy only past the bound', async () => {
    const through = await startProxy();
    const inf = await startInformer(through, { unhealthyAfterMs: 1_500 });
    await waitFor(() => proxy!.watchRequests().length === 1, { description: 'the first watch' });
    expect(inf.health()).toEqual({ healthy: true });

    await proxy!.down();
    await client.create(ConfigMapKind, configMap(ns, 'while-down', '1'));
    const unhealthy = await waitFor(() => (inf.health().healthy ? undefined : inf.health()), {
      description: 'the informer to report itself unhealthy',
    });
    expect(unhealthy.reason).toMatch(/configmaps has made no list or watch progress.*ECONNREFUSED/);

    await proxy!.up();
    await seen(['added while-down=1'], 'the create made while the server was unreachable');
    await waitFor(() => inf.health().healthy, { description: 'the informer to be healthy again' });
    expect(await metric(registry, 'aro_informer_watch_restarts_total', 'reason="error"')).toBeGreaterThan(0);
  });

  it('aborts a watch that stays silent past the bound and relists', async () => {
    const through = await startProxy();
    proxy!.mode = 'silent-watches';
    await startInformer(through, { silenceTimeoutMs: 2_000 });
    // Nothing reaches the informer through its watch now; only a relist can show it this.
    await client.create(ConfigMapKind, configMap(ns, 'unseen-by-watch', '1'));
    await seen(['added unseen-by-watch=1'], 'the relist after the silent watch');
    expect(await metric(registry, 'aro_informer_watch_restarts_total', 'reason="silent"')).toBeGreaterThan(0);

    proxy!.mode = 'forward';
    await client.create(ConfigMapKind, configMap(ns, 'through-watch', '1'));
    await seen(['added through-watch=1'], 'a create once the watch carries events again');
  });
});

describe('InformerCache against the API server', () => {
  let client: KubeClient;
  let cache: InformerCache;
  let ns: string;

  beforeAll(async () => {
    client = new KubeClient(testKubeConfig());
    cache = new InformerCache(client, { registry: new Registry() });
    await cache.start();
  });

  beforeEach(async () => {
    ns = await createTestNamespace('informer-cache');
  });

  afterAll(async () => {
    await cache.stop();
    client.close();
  });

  it('lets a reader see its own write within a bounded wait', async () => {
    await client.create<V1Secret>(SecretKind, {
      metadata: { name: 'own-write', namespace: ns },
      stringData: { a: 'b' },
    });
    const cached = await waitFor(
      async () => {
        try {
          return await cache.get<V1Secret>(SecretKind, ns, 'own-write');
        } catch (e) {
          if (isNotFound(e)) return undefined;
          throw e;
        }
      },
      { description: 'the cache to hold the secret just created', timeoutMs: 10_000 },
    );
    expect(cached.data?.a).toBe(Buffer.from('b').toString('base64'));

    await client.mergePatch(SecretKind, ns, 'own-write', { metadata: { labels: { v: '2' } } });
    await waitFor(
      async () => (await cache.get<V1Secret>(SecretKind, ns, 'own-write')).metadata?.labels?.v === '2',
      {
        description: 'the cache to hold the patched secret',
        timeoutMs: 10_000,
      },
    );
  });

  it('answers a missing object with the same not-found error as the API', async () => {
    const err = await cache.get(SecretKind, ns, 'never-created').catch((e: unknown) => e);
    expect(isNotFound(err)).toBe(true);
    expect((err as Error).message).toContain('secrets "never-created" not found');
  });

  it('lists by label selector locally with the server semantics', async () => {
    const labels: Record<string, string>[] = [{ role: 'a' }, { role: 'b' }, {}];
    for (const [i, l] of labels.entries()) {
      await client.create<V1Secret>(SecretKind, {
        metadata: { name: `l${i}`, namespace: ns, labels: { set: 'x', ...l } },
      });
    }
    const fromServer = async (selector: string) =>
      (await client.list<V1Secret>(SecretKind, { namespace: ns, labelSelector: selector }))
        .map((s) => s.metadata?.name)
        .sort();
    const fromCache = async (selector: string) =>
      (await cache.list<V1Secret>(SecretKind, { namespace: ns, labelSelector: selector }))
        .map((s) => s.metadata?.name)
        .sort();
    await waitFor(async () => (await fromCache('set=x')).length === 3, {
      description: 'the cache to hold the three secrets',
    });
    for (const selector of [
      'set=x',
      'role!=a,set=x',
      'role in (a,b)',
      'role notin (a),set',
      '!role,set=x',
      'set,role=b',
    ]) {
      expect(await fromCache(selector)).toEqual(await fromServer(selector));
    }
  });

  it('finds objects by their controlling owner', async () => {
    const owner = await client.create<EphemeralRunner>(EphemeralRunnerKind, {
      metadata: { name: 'owner', namespace: ns },
      spec: { githubConfigUrl: 'https://github.com/o/r', githubConfigSecret: 's', runnerScaleSetId: 1 },
    });
    await client.create<V1Pod>(PodKind, {
      metadata: {
        name: 'owned',
        namespace: ns,
        ownerReferences: [
          {
            apiVersion: 'actions.github.com/v1alpha1',
            kind: 'EphemeralRunner',
            name: 'owner',
            uid: owner.metadata!.uid!,
            controller: true,
          },
        ],
      },
      spec: { containers: [{ name: 'c', image: 'i' }] },
    });
    const pods = cache.informerFor<V1Pod>(PodKind);
    await pods.waitForSync();
    const key = controllingOwnerKey(ns, 'EphemeralRunner', 'owner');
    const owned = await waitFor(() => pods.byIndex(CONTROLLING_OWNER_INDEX, key)[0], {
      description: 'the pod under its owner in the index',
    });
    expect(owned.metadata?.name).toBe('owned');
  });

  it('keeps to its namespace when scoped to one', async () => {
    const scoped = new InformerCache(client, { namespace: ns, registry: new Registry() });
    await scoped.start();
    try {
      await expect(scoped.get(SecretKind, 'kube-system', 'x')).rejects.toThrow(/watches namespace .* only/);
      await client.create<V1Secret>(SecretKind, { metadata: { name: 'scoped', namespace: ns } });
      await waitFor(async () => (await scoped.list(SecretKind)).some((s) => s.metadata?.name === 'scoped'), {
        description: 'the scoped cache to list the secret',
      });
      expect(scoped.health()).toEqual({ healthy: true });
      expect(scoped.hasSynced()).toBe(true);
    } finally {
      await scoped.stop();
    }
  });

  it('fails a read with the reason when its kind cannot sync, instead of hanging', async () => {
    const nobody = new KubeClient(await kubeConfigForUser(`informer-cache-nobody-${ns}`));
    const denied = new InformerCache(nobody, {
      registry: new Registry(),
      syncTimeoutMs: 1_500,
      backoff: { initialMs: 100, maxMs: 200 },
    });
    await denied.start();
    try {
      await expect(denied.get(SecretKind, ns, 'x')).rejects.toThrow(
        /The cache of Secret has not synced within 1500 ms; last error: list Secret failed: .*cannot list resource "secrets"/,
      );
    } finally {
      await denied.stop();
      nobody.close();
    }
  });

  it('refuses reads before it is started', async () => {
    const idle = new InformerCache(client, { registry: new Registry() });
    await expect(idle.get(SecretKind, ns, 'x')).rejects.toThrow(/not started/);
  });
});
