import type { Lease, LeaseClient } from '../leaderelection/lease-client';

/**
 * Leases held in memory with the API server's concurrency rules (AlreadyExists on a second create,
 * Conflict on a stale resourceVersion), for unit tests of anything that elects a leader. Each
 * candidate gets its own view, and a view can be cut off to play a partitioned replica.
 */
export class InMemoryLeases {
  private readonly leases = new Map<string, Lease>();
  private version = 0;
  /** Views (by name) whose calls fail as if their connection to the API server were gone. */
  readonly cutOff = new Set<string>();

  /** The lease API as one candidate sees it. */
  clientFor(view: string): LeaseClient {
    return {
      get: (namespace, name) => this.call(view, () => this.read(namespace, name)),
      create: (lease) => this.call(view, () => this.create(lease)),
      replace: (lease) => this.call(view, () => this.replace(lease)),
    };
  }

  /** A copy of the stored lease. */
  read(namespace: string, name: string): Lease | undefined {
    const lease = this.leases.get(`${namespace}/${name}`);
    return lease && structuredClone(lease);
  }

  /** Stores a lease as another process would write it, whatever is there. */
  put(namespace: string, name: string, spec: Lease['spec']): void {
    this.store({ metadata: { namespace, name }, spec });
  }

  private async call<T>(view: string, fn: () => T): Promise<T> {
    await Promise.resolve();
    if (this.cutOff.has(view)) throw new Error(`connection to the API server refused (${view} is cut off)`);
    return fn();
  }

  private create(lease: Lease): Lease {
    const key = keyOf(lease);
    if (this.leases.has(key)) throw new Error(`leases "${key}" already exists (AlreadyExists)`);
    return this.store(lease);
  }

  private replace(lease: Lease): Lease {
    const key = keyOf(lease);
    const stored = this.leases.get(key);
    if (stored === undefined) throw new Error(`leases "${key}" not found (NotFound)`);
    if (lease.metadata?.resourceVersion !== stored.metadata?.resourceVersion) {
      throw new Error(
        `Operation cannot be fulfilled on leases "${key}": the object has been modified (Conflict)`,
      );
    }
    return this.store(lease);
  }

  private store(lease: Lease): Lease {
    const stored = structuredClone({
      ...lease,
      metadata: { ...lease.metadata, resourceVersion: String(++this.version) },
    });
    this.leases.set(keyOf(stored), stored);
    return structuredClone(stored);
  }
}

function keyOf(lease: Lease): string {
  return `${lease.metadata?.namespace ?? ''}/${lease.metadata?.name ?? ''}`;
}
