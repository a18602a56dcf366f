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
