import type { ResourceKind } from '@aro/api';
import { isNotFound } from '../client/errors';
import type { KubeApi } from '../client/kube-api';
import type { DeleteOptions, KubeObject, Reader } from '../client/types';

/** The object, or undefined when it does not exist. */
export async function getIgnoringNotFound<T extends KubeObject>(
  reader: Pick<Reader, 'get'>,
  kind: ResourceKind,
  namespace: string,
  name: string,
): Promise<T | undefined> {
  try {
    return await reader.get<T>(kind, namespace, name);
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/**
 * Deletes the object; one already gone counts as deleted, since that is what was wanted. True when
 * this call deleted it. With `uid`, only that incarnation of the name is deleted (a precondition),
 * never a newer object that took the name since it was read.
 */
export async function deleteIgnoringNotFound(
  client: Pick<KubeApi, 'delete'>,
  kind: ResourceKind,
  namespace: string,
  name: string,
  { uid, ...opts }: DeleteOptions & { uid?: string } = {},
): Promise<boolean> {
  const options: DeleteOptions = uid ? { ...opts, preconditions: { uid } } : opts;
  try {
    await client.delete(kind, namespace, name, options);
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}
