import type { ResourceKind } from '@aro/api';
import type { KubeApi } from '../client/kube-api';
import { KubeApiError } from '../client/errors';
import type { DeleteOptions, KubeObject, ListOptions } from '../client/types';
import { parseLabelSelector } from '../cache/selectors';

/** One call the fake received, as a spec can match it in a fault. */
export interface FakeKubeCall {
  verb: 'get' | 'list' | 'create' | 'replace' | 'delete' | 'patch' | 'patch status';
  kind: ResourceKind;
  namespace: string;
  name: string;
  body?: unknown;
}

/** Returns the error a call must fail with, or undefined to let it through. */
export type FakeKubeFault = (call: FakeKubeCall) => Error | undefined;

/** An error as the API server answers it: `apiError(403, 'Forbidden', 'exceeded quota: q')`. */
export function apiError(code: number, reason: string, message: string, call?: FakeKubeCall): KubeApiError {
  return new KubeApiError(
    code,
    {
      verb: call?.verb ?? 'request',
      kind: call?.kind ?? { group: '', version: 'v1', kind: 'Object', plural: 'objects', namespaced: true },
      namespace: call?.namespace,
      name: call?.name,
    },
    { kind: 'Status', code, reason, message },
  );
}

type Stored = KubeObject & { spec?: unknown; status?: unknown; data?: Record<string, string> };

function kindKey(kind: ResourceKind): string {
  return `${kind.group}/${kind.version}/${kind.plural}`;
}

/** RFC 7386: objects merge, null deletes, anything else (arrays included) replaces. */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const base: Record<string, unknown> =
    target !== null && typeof target === 'object' && !Array.isArray(target)
      ? { ...(target as Record<string, unknown>) }
      : {};
  for (const [key, value] of Object.entries(patch as Record<string, unknown>)) {
    if (value === null) delete base[key];
    else base[key] = mergePatch(base[key], value);
  }
  return base;
}

/**
 * An in-memory API server for the unit specs of reconcilers: the semantics a reconciler relies on,
 * none of the transport. Objects get a uid, a resourceVersion bumped on every write and a
 * creationTimestamp from the spec's clock; create answers AlreadyExists, get/patch/delete NotFound; a
 * merge patch carrying `metadata.resourceVersion` conflicts when it is stale; the main resource
 * ignores `status` and the status subresource changes only `status`; deleting an object with
 * finalizers marks it deleted, and it goes once the last finalizer is removed; `stringData` becomes
 * base64 `data`, as for a Secret.
 *
 * It serves as client, cache and uncached reader at once: a spec about a stale cache wraps it.
 * `fault` injects the failures upstream's branches react to (quota, AlreadyExists, a 500).
 */
export class FakeKubeClient implements KubeApi {
  private readonly objects = new Map<string, Map<string, Stored>>();
  private version = 0;
  private uids = 0;
  private generated = 0;
  private readonly faults: FakeKubeFault[] = [];

  constructor(private readonly now: () => number = Date.now) {}

  /** Fails the calls `fault` picks until the returned function is called. */
  fault(fault: FakeKubeFault): () => void {
    this.faults.push(fault);
    return () => {
      const i = this.faults.indexOf(fault);
      if (i >= 0) this.faults.splice(i, 1);
    };
  }

  /** Stores an object as another actor would have made it (no fault, no AlreadyExists). */
  seed<T extends KubeObject>(kind: ResourceKind, obj: T): T {
    return structuredClone(this.store(kind, this.fresh(obj))) as T;
  }

  /** A copy of the stored object, or undefined; never fails. */
  peek<T extends KubeObject>(kind: ResourceKind, namespace: string, name: string): T | undefined {
    const obj = this.bucket(kind).get(`${namespace}/${name}`);
    return obj && (structuredClone(obj) as T);
  }

  async get<T extends KubeObject>(kind: ResourceKind, namespace: string, name: string): Promise<T> {
    const call = this.enter({ verb: 'get', kind, namespace, name });
    return structuredClone(this.existing(call)) as T;
  }

  async list<T extends KubeObject>(kind: ResourceKind, opts: ListOptions = {}): Promise<T[]> {
    this.enter({ verb: 'list', kind, namespace: opts.namespace ?? '', name: '' });
    const matches = parseLabelSelector(opts.labelSelector);
    return [...this.bucket(kind).values()]
      .filter((o) => !opts.namespace || o.metadata?.namespace === opts.namespace)
      .filter((o) => matches(o.metadata?.labels ?? {}))
      .map((o) => structuredClone(o) as T);
  }

  async create<T extends KubeObject>(kind: ResourceKind, obj: T): Promise<T> {
    if (!obj.metadata?.name && obj.metadata?.generateName) {
      // As the apiserver does: the prefix and a suffix unique in this store.
      obj = {
        ...obj,
        metadata: { ...obj.metadata, name: `${obj.metadata.generateName}${++this.generated}` },
      };
    }
    const call = this.enter({
      verb: 'create',
      kind,
      namespace: obj.metadata?.namespace ?? '',
      name: obj.metadata?.name ?? '',
      body: obj,
    });
    if (this.bucket(kind).has(`${call.namespace}/${call.name}`)) {
      throw apiError(409, 'AlreadyExists', `${kind.plural} "${call.name}" already exists`, call);
    }
    return structuredClone(this.store(kind, this.fresh(obj))) as T;
  }

  async replace<T extends KubeObject>(kind: ResourceKind, obj: T): Promise<T> {
    const call = this.enter({
      verb: 'replace',
      kind,
      namespace: obj.metadata?.namespace ?? '',
      name: obj.metadata?.name ?? '',
      body: obj,
    });
    const stored = this.existing(call);
    this.checkVersion(call, stored, obj.metadata?.resourceVersion);
    const next = { ...structuredClone(obj), status: stored.status } as Stored;
    next.metadata = { ...next.metadata, uid: stored.metadata?.uid };
    return structuredClone(this.write(kind, next)) as T;
  }

  async mergePatch<T extends KubeObject>(
    kind: ResourceKind,
    namespace: string,
    name: string,
    patch: object,
  ): Promise<T> {
    const call = this.enter({ verb: 'patch', kind, namespace, name, body: patch });
    const stored = this.existing(call);
    const { status: _ignored, ...rest } = patch as { status?: unknown };
    void _ignored;
    this.checkVersion(call, stored, (patch as KubeObject).metadata?.resourceVersion);
    const next = mergePatch(stored, rest) as Stored;
    next.status = stored.status;
    return structuredClone(this.write(kind, next)) as T;
  }

  async mergePatchStatus<T extends KubeObject>(
    kind: ResourceKind,
    namespace: string,
    name: string,
    patch: object,
  ): Promise<T> {
    const call = this.enter({ verb: 'patch status', kind, namespace, name, body: patch });
    const stored = this.existing(call);
    this.checkVersion(call, stored, (patch as KubeObject).metadata?.resourceVersion);
    const next = { ...stored, status: mergePatch(stored.status, (patch as Stored).status ?? {}) };
    return structuredClone(this.write(kind, next)) as T;
  }

  async delete(kind: ResourceKind, namespace: string, name: string, opts: DeleteOptions = {}): Promise<void> {
    const call = this.enter({ verb: 'delete', kind, namespace, name, body: opts });
    const stored = this.existing(call);
    const uid = opts.preconditions?.uid;
    if (uid !== undefined && uid !== stored.metadata?.uid) {
      throw apiError(409, 'Conflict', `precondition failed: UID in precondition: ${uid}`, call);
    }
    if ((stored.metadata?.finalizers ?? []).length === 0) {
      this.bucket(kind).delete(`${namespace}/${name}`);
      return;
    }
    if (stored.metadata?.deletionTimestamp) return;
    this.write(kind, {
      ...stored,
      metadata: { ...stored.metadata, deletionTimestamp: new Date(this.now()) },
    });
  }

  private enter(call: FakeKubeCall): FakeKubeCall {
    for (const fault of this.faults) {
      const error = fault(call);
      if (error) throw error;
    }
    return call;
  }

  private existing(call: FakeKubeCall): Stored {
    const obj = this.bucket(call.kind).get(`${call.namespace}/${call.name}`);
    if (!obj) throw apiError(404, 'NotFound', `${call.kind.plural} "${call.name}" not found`, call);
    return obj;
  }

  private checkVersion(call: FakeKubeCall, stored: Stored, expected: string | undefined): void {
    if (expected !== undefined && expected !== stored.metadata?.resourceVersion) {
      throw apiError(
        409,
        'Conflict',
        `Operation cannot be fulfilled on ${call.kind.plural} "${call.name}": the object has been modified`,
        call,
      );
    }
  }

  private fresh<T extends KubeObject>(obj: T): Stored {
    const copy = structuredClone(obj) as Stored & { stringData?: Record<string, string> };
    if (copy.stringData) {
      copy.data = { ...copy.data };
      for (const [k, v] of Object.entries(copy.stringData)) copy.data[k] = Buffer.from(v).toString('base64');
      delete copy.stringData;
    }
    copy.metadata = {
      ...copy.metadata,
      uid: `uid-${++this.uids}`,
      creationTimestamp: copy.metadata?.creationTimestamp ?? new Date(this.now()),
    };
    return copy;
  }

  /** Stores a new version; an object being deleted whose last finalizer went is removed instead. */
  private write(kind: ResourceKind, obj: Stored): Stored {
    const key = `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
    if (obj.metadata?.deletionTimestamp && (obj.metadata.finalizers ?? []).length === 0) {
      this.bucket(kind).delete(key);
      return obj;
    }
    return this.store(kind, obj);
  }

  private store(kind: ResourceKind, obj: Stored): Stored {
    obj.metadata = { ...obj.metadata, resourceVersion: String(++this.version) };
    this.bucket(kind).set(`${obj.metadata.namespace ?? ''}/${obj.metadata.name ?? ''}`, obj);
    return obj;
  }

  private bucket(kind: ResourceKind): Map<string, Stored> {
    let bucket = this.objects.get(kindKey(kind));
    if (!bucket) this.objects.set(kindKey(kind), (bucket = new Map()));
    return bucket;
  }
}
