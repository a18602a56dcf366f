import { KubeClient } from '../client/kube-client';
import { PodKind } from '../client/kinds';
import type { KubeObject } from '../client/types';
import { InformerCache } from './informer-cache';
import { Registry } from 'prom-client';

interface Pod extends KubeObject {
  metadata: { name: string; namespace: string; labels?: Record<string, string> };
  spec?: { n?: number };
}

/**
 * A KubeClient that lists the given pods once and then holds one watch open until it is stopped: all a
 * synced cache needs to answer reads.
 */
function listingClient(pods: Pod[]): KubeClient {
  const client = Object.create(KubeClient.prototype) as KubeClient;
  return Object.assign(client, {
    listWithVersion: () => Promise.resolve({ items: structuredClone(pods), resourceVersion: '10' }),
    watch: (_kind: unknown, _opts: unknown, _onEvent: unknown, signal: AbortSignal) =>
      new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true })),
  });
}

describe('InformerCache', () => {
  let cache: InformerCache;

  beforeEach(async () => {
    const pod: Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'a', namespace: 'ns', labels: { role: 'worker' } },
      spec: { n: 1 },
    };
    cache = new InformerCache(listingClient([pod]), { namespace: 'ns', registry: new Registry() });
    cache.informerFor(PodKind);
    await cache.start();
    await cache.waitForSync();
  });

  afterEach(() => cache.stop());

  it.each(['get', 'list'] as const)(
    'hands out copies from %s: mutating what it returned changes nothing a later read sees',
    async (path) => {
      const pristine = structuredClone(await cache.get<Pod>(PodKind, 'ns', 'a'));
      const reads = {
        get: async () => [await cache.get<Pod>(PodKind, 'ns', 'a')],
        list: () => cache.list<Pod>(PodKind, { namespace: 'ns', labelSelector: 'role=worker' }),
      };

      for (const object of await reads[path]()) {
        object.spec!.n = 99;
        object.metadata.labels!.role = 'hijacked';
        object.metadata.name = 'renamed';
      }

      for (const read of Object.values(reads)) expect(await read()).toEqual([pristine]);
      expect(await cache.list<Pod>(PodKind, { labelSelector: 'role=hijacked' })).toEqual([]);
    },
  );
});

describe('InformerCache scoped to a namespace and the controller namespace', () => {
  /** Lists only the pods of the namespace asked for, as the API server does for a namespaced list. */
  function namespacedListingClient(pods: Pod[]): KubeClient {
    const client = Object.create(KubeClient.prototype) as KubeClient;
    return Object.assign(client, {
      listWithVersion: (_kind: unknown, opts: { namespace?: string }) =>
        Promise.resolve({
          items: structuredClone(
            pods.filter((p) => !opts.namespace || p.metadata.namespace === opts.namespace),
          ),
          resourceVersion: '10',
        }),
      watch: (_kind: unknown, _opts: unknown, _onEvent: unknown, signal: AbortSignal) =>
        new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true })),
    });
  }

  const pod = (namespace: string, name: string): Pod => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
  });

  it('reads both namespaces, events from both, and refuses any other', async () => {
    const cache = new InformerCache(
      namespacedListingClient([pod('runners', 'r'), pod('controller', 'listener'), pod('other', 'x')]),
      { namespace: 'runners', extraNamespaces: ['controller'], registry: new Registry() },
    );
    const seen: string[] = [];
    cache
      .informerFor(PodKind)
      .addEventHandler((e) => seen.push(`${e.object.metadata?.namespace}/${e.object.metadata?.name}`));
    await cache.start();
    try {
      await cache.waitForSync();
      expect((await cache.get<Pod>(PodKind, 'controller', 'listener')).metadata.name).toBe('listener');
      expect((await cache.get<Pod>(PodKind, 'runners', 'r')).metadata.name).toBe('r');
      expect((await cache.list<Pod>(PodKind)).map((p) => p.metadata.name).sort()).toEqual(['listener', 'r']);
      expect(
        (await cache.list<Pod>(PodKind, { namespace: 'controller' })).map((p) => p.metadata.name),
      ).toEqual(['listener']);
      expect(seen.sort()).toEqual(['controller/listener', 'runners/r']);
      await expect(cache.get(PodKind, 'other', 'x')).rejects.toThrow(
        /watches namespace runners, controller only/,
      );
    } finally {
      await cache.stop();
    }
  });
});
