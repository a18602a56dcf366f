import type { ResourceKind } from '@aro/api';
import { isNotFound } from '../client/errors';
import type { KubeApi } from '../client/kube-api';
import type { DeleteOptions, KubeObject } from '../client/types';

/**
 * The deletions issued in this process, by object UID, shared by every controller that may delete the
 * same object. Two controllers acting on one object (a runner's own controller when its job ends, and
 * its set's, which removes finished runners) each see it live in their cache until the deletion's event
 * arrives, and each would delete it: a second request the API server only answers. The first records
 * the UID here; the second finds it and skips its request.
 *
 * An entry lasts until the object's deletion shows (`observe`: marked for deletion or gone) and at most
 * `ttlMs`: a deletion whose event never came is asked again after that, so nothing is held back for
 * good. A request that failed (other than NotFound, which means the object is gone) is forgotten at
 * once: the other controller must not rely on a deletion that did not happen. In memory on purpose: a
 * restarted process lists its cache fresh, with every issued deletion already in it.
 */
export class IssuedDeletions {
  /** UID → when the entry lapses; insertion order is issue order, so the oldest lapse first. */
  private readonly issued = new Map<string, number>();

  constructor(
    private readonly ttlMs = 30_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether a deletion of the object with this UID was issued and its lapse has not come. */
  has(uid: string | undefined): boolean {
    if (!uid) return false;
    const lapse = this.issued.get(uid);
    if (lapse === undefined) return false;
    if (lapse > this.now()) return true;
    this.issued.delete(uid);
    return false;
  }

  /**
   * Deletes `obj` (pinned to its UID, so a same-named successor is never taken) unless a deletion of it
   * was already issued. Returns false when the request was skipped. NotFound counts as deleted.
   */
  async delete(
    client: Pick<KubeApi, 'delete'>,
    kind: ResourceKind,
    obj: KubeObject,
    options: DeleteOptions = {},
  ): Promise<boolean> {
    const { namespace = '', name = '', uid } = obj.metadata ?? {};
    if (this.has(uid)) return false;
    this.record(uid);
    try {
      await client.delete(kind, namespace, name, {
        ...options,
        preconditions: { ...options.preconditions, ...(uid ? { uid } : {}) },
      });
    } catch (err) {
      if (isNotFound(err)) return true;
      this.forget(uid);
      throw err;
    }
    return true;
  }

  /** The cache shows these objects: an issued deletion that has taken effect needs no record. */
  observe(obj: KubeObject): void {
    const uid = obj.metadata?.uid;
    if (uid && obj.metadata?.deletionTimestamp) this.issued.delete(uid);
  }

  forget(uid: string | undefined): void {
    if (uid) this.issued.delete(uid);
  }

  /** How many deletions are remembered (tests, and the bound on memory). */
  get size(): number {
    return this.issued.size;
  }

  private record(uid: string | undefined): void {
    if (!uid) return;
    const now = this.now();
    // Lapsed entries are dropped as new ones come, oldest first: the map never holds more than the
    // deletions of one `ttlMs`, whether or not anyone asks about them again.
    for (const [old, lapse] of this.issued) {
      if (lapse > now) break;
      this.issued.delete(old);
    }
    this.issued.delete(uid);
    this.issued.set(uid, now + this.ttlMs);
  }
}
