import { isDeepStrictEqual } from 'node:util';
import type { ResourceKind } from '@aro/api';
import { type KubeApi, type KubeObject, isNotFound } from '@aro/kube';
import { describeError } from './describe-error';

/**
 * Patches the status fields in `change` when one of them differs from what `obj` says (a pass that
 * changes nothing writes nothing), and keeps the answer's status on `obj` for the rest of the pass. An
 * object already gone is left alone: its deletion is what the next pass will see.
 */
export async function patchChangedStatus<S extends object>(
  client: Pick<KubeApi, 'mergePatchStatus'>,
  kind: ResourceKind,
  obj: KubeObject & { status?: S },
  change: S,
): Promise<void> {
  const current = (obj.status ?? {}) as Record<string, unknown>;
  if (!Object.entries(change).some(([k, v]) => !isDeepStrictEqual(current[k], v))) return;
  const { namespace = '', name = '' } = obj.metadata ?? {};
  try {
    const updated = await client.mergePatchStatus<KubeObject & { status?: S }>(kind, namespace, name, {
      status: change,
    });
    obj.status = updated.status;
  } catch (err) {
    if (!isNotFound(err)) {
      throw new Error(`${kind.kind} ${namespace}/${name}: status patch failed: ${describeError(err)}`, {
        cause: err,
      });
    }
  }
}
