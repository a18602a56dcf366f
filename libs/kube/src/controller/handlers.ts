import type { ResourceKind } from '@aro/api';
import type { InformerEvent } from '../cache';
import type { KubeObject } from '../client';
import type { EventMapper } from './controller';
import { type Request, requestKey } from './types';

/** The object's own key: what `for(kind)` enqueues. */
export function enqueueObject<T extends KubeObject>(): EventMapper<T> {
  return (event) => {
    const meta = event.object.metadata;
    return meta?.name ? [{ namespace: meta.namespace ?? '', name: meta.name }] : [];
  };
}

/**
 * The owning object's key: what `owns(kind)` enqueues. Only the controlling owner (controller=true) of
 * the `owner` kind counts, matched on API group and kind but not version, as controller-runtime does,
 * so the mapping survives a version bump of the owner's API. On an update, the owners before and after
 * are both enqueued: one that lost the object needs to hear of it too.
 */
export function enqueueControllingOwner<T extends KubeObject>(owner: ResourceKind): EventMapper<T> {
  const ownerOf = (obj: T): Request[] => {
    const ref = obj.metadata?.ownerReferences?.find(
      (r) => r.controller === true && r.kind === owner.kind && groupOf(r.apiVersion) === owner.group,
    );
    if (ref === undefined) return [];
    return [{ namespace: owner.namespaced ? (obj.metadata?.namespace ?? '') : '', name: ref.name }];
  };
  return eachSide(ownerOf);
}

/** Whatever requests `map` derives from the object (both sides of an update): what `watches` enqueues. */
export function enqueueMapped<T extends KubeObject>(map: (obj: T) => Request[]): EventMapper<T> {
  return eachSide(map);
}

function eachSide<T extends KubeObject>(map: (obj: T) => Request[]): EventMapper<T> {
  return (event: InformerEvent<T>) => {
    const requests = map(event.object);
    if (event.type !== 'modified' || event.oldObject === undefined) return requests;
    const seen = new Set(requests.map(requestKey));
    return [...requests, ...map(event.oldObject).filter((r) => !seen.has(requestKey(r)))];
  };
}

function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}
