import { LeaseKind, isNotFound, type KubeClient, type KubeObject } from '../client';

/** coordination.k8s.io/v1 LeaseSpec, the fields leader election reads and writes. */
export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  /** MicroTime: RFC 3339 with microseconds. */
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export interface Lease extends KubeObject {
  spec?: LeaseSpec;
}

/**
 * The three calls leader election makes. Narrow on purpose: the elector's unit tests run against an
 * in-memory store with the API server's resourceVersion rules, and the integration tests against the
 * real one through `kubeLeaseClient`.
 */
export interface LeaseClient {
  /** The lease, or undefined if there is none. */
  get(namespace: string, name: string): Promise<Lease | undefined>;
  /** Fails (AlreadyExists) if another candidate created it first. */
  create(lease: Lease): Promise<Lease>;
  /** PUT carrying `metadata.resourceVersion`; fails with Conflict if the lease changed since it was read. */
  replace(lease: Lease): Promise<Lease>;
}

export function kubeLeaseClient(client: KubeClient): LeaseClient {
  return {
    async get(namespace, name) {
      try {
        return await client.get<Lease>(LeaseKind, namespace, name);
      } catch (e) {
        if (isNotFound(e)) return undefined;
        throw e;
      }
    },
    create: (lease) => client.create<Lease>(LeaseKind, lease),
    replace: (lease) => client.replace<Lease>(LeaseKind, lease),
  };
}
