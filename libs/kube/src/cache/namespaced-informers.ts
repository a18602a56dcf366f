import type { KubeObject } from '../client/types';
import type { Informer, InformerEventHandler } from './informer';

/** What the cache and the controllers use of an informer; one Informer, or one per watched namespace. */
export type CacheInformer<T extends KubeObject> = Pick<
  Informer<T>,
  | 'addEventHandler'
  | 'addIndex'
  | 'start'
  | 'stop'
  | 'hasSynced'
  | 'waitForSync'
  | 'get'
  | 'list'
  | 'byIndex'
  | 'health'
>;

/**
 * One kind watched in a few namespaces (the watched one and the controller's own, where listeners
 * live), as one informer: the RBAC of a single-namespace install grants list/watch in those
 * namespaces only, so a cluster-wide watch is not an option. Each namespace keeps its own informer
 * (its own list, watch, resourceVersion and backoff); reads and events are their union.
 */
export class NamespacedInformers<T extends KubeObject> implements CacheInformer<T> {
  constructor(private readonly byNamespace: ReadonlyMap<string, Informer<T>>) {}

  addEventHandler(handler: InformerEventHandler<T>): void {
    for (const informer of this.byNamespace.values()) informer.addEventHandler(handler);
  }

  addIndex(name: string, fn: (o: T) => string[]): void {
    for (const informer of this.byNamespace.values()) informer.addIndex(name, fn);
  }

  async start(): Promise<void> {
    await Promise.all([...this.byNamespace.values()].map((i) => i.start()));
  }

  async stop(): Promise<void> {
    await Promise.all([...this.byNamespace.values()].map((i) => i.stop()));
  }

  hasSynced(): boolean {
    return [...this.byNamespace.values()].every((i) => i.hasSynced());
  }

  async waitForSync(signal?: AbortSignal): Promise<void> {
    await Promise.all([...this.byNamespace.values()].map((i) => i.waitForSync(signal)));
  }

  get(namespace: string, name: string): T | undefined {
    return this.byNamespace.get(namespace)?.get(namespace, name);
  }

  list(namespace?: string): T[] {
    if (namespace) return this.byNamespace.get(namespace)?.list(namespace) ?? [];
    return [...this.byNamespace.values()].flatMap((i) => i.list());
  }

  byIndex(name: string, value: string): T[] {
    return [...this.byNamespace.values()].flatMap((i) => i.byIndex(name, value));
  }

  health(): { healthy: boolean; reason?: string; lastError?: string } {
    const all = [...this.byNamespace.values()].map((i) => i.health());
    const unhealthy = all.filter((h) => !h.healthy);
    const lastError = all.find((h) => h.lastError !== undefined)?.lastError;
    return {
      healthy: unhealthy.length === 0,
      ...(unhealthy.length > 0 ? { reason: unhealthy.map((h) => h.reason).join('; ') } : {}),
      ...(lastError !== undefined ? { lastError } : {}),
    };
  }
}
