import type { V1OwnerReference } from '@kubernetes/client-node';
import type { KubeObject } from '../client/types';

/** The controller reference a created object carries, so garbage collection and `owns()` find its owner. */
export function controllerReference(owner: KubeObject, kind: string, apiVersion: string): V1OwnerReference {
  return {
    apiVersion,
    kind,
    name: owner.metadata?.name ?? '',
    uid: owner.metadata?.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** Whether `obj`'s controller reference names `owner` (by UID: a recreated owner of the same name is another). */
export function isControlledBy(obj: KubeObject, owner: KubeObject): boolean {
  return (
    obj.metadata?.ownerReferences?.some(
      (ref) => ref.controller === true && ref.uid === owner.metadata?.uid,
    ) ?? false
  );
}

/** `namespace/name`, the key a controller's per-object memory and logs use. */
export function objectKey(obj: KubeObject): string {
  return `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
}
