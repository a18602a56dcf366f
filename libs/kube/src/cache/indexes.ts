import type { KubeObject } from '../client/types';

/**
 * Index of objects by their controlling owner (the ownerReference with `controller: true`). Values are
 * `controllingOwnerKey(namespace, ownerKind, ownerName)`: `<namespace>/<ownerKind>/<ownerName>`, e.g.
 * `arc-runners/EphemeralRunner/runner-abc12`. Owners are namespace-local, so the owned object's namespace
 * is the owner's. The owner's API group is left out: the operator owns nothing through two kinds of the
 * same name.
 */
export const CONTROLLING_OWNER_INDEX = 'controllingOwner';

export function controllingOwnerKey(namespace: string, ownerKind: string, ownerName: string): string {
  return `${namespace}/${ownerKind}/${ownerName}`;
}

export function controllingOwnerIndex(o: KubeObject): string[] {
  const owner = o.metadata?.ownerReferences?.find((ref) => ref.controller === true);
  return owner ? [controllingOwnerKey(o.metadata?.namespace ?? '', owner.kind, owner.name)] : [];
}
