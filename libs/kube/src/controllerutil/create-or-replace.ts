import type { ResourceKind } from '@aro/api';
import type { KubeApi } from '../client/kube-api';
import type { KubeObject } from '../client/types';
import { getIgnoringNotFound } from './not-found';

/** What {@link createOrReplace} did (controller-runtime's OperationResult). */
export type WriteOperation = 'created' | 'replaced' | 'unchanged';

export interface CreateOrReplaceOptions<T extends KubeObject> {
  /**
   * Whether the live object already says what `desired` says. Compare only what this controller
   * sets (an integrity hash, the data it writes), so fields the API server or others add do not
   * cause a write on every pass.
   */
  upToDate(current: T, desired: T): boolean;
  /** The live object when the caller has just read it (undefined: it does not exist); read if omitted. */
  current?: T | undefined | null;
}

/**
 * Creates `desired`, or replaces the live object with it when it is not up to date, as
 * controller-runtime's CreateOrUpdate. The replace carries the resourceVersion read, so a write over
 * a newer object is refused (409) and the next pass decides again from what is there.
 */
export async function createOrReplace<T extends KubeObject>(
  client: Pick<KubeApi, 'get' | 'create' | 'replace'>,
  kind: ResourceKind,
  desired: T,
  options: CreateOrReplaceOptions<T>,
): Promise<{ object: T; operation: WriteOperation }> {
  const current =
    options.current !== undefined
      ? (options.current ?? undefined)
      : await getIgnoringNotFound<T>(
          client,
          kind,
          desired.metadata?.namespace ?? '',
          desired.metadata?.name ?? '',
        );
  if (!current) return { object: await client.create<T>(kind, desired), operation: 'created' };
  if (options.upToDate(current, desired)) return { object: current, operation: 'unchanged' };
  const object = await client.replace<T>(kind, {
    ...desired,
    metadata: { ...desired.metadata, resourceVersion: current.metadata?.resourceVersion },
  });
  return { object, operation: 'replaced' };
}
