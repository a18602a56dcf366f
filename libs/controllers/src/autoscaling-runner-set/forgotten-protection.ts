import { AutoscalingRunnerSet, CLEANUP_PROTECTION_FINALIZER, Labels, type ResourceKind } from '@aro/api';
import {
  type KeyedStore,
  KubeObject,
  RoleBindingKind,
  RoleKind,
  SecretKind,
  ServiceAccountKind,
} from '@aro/kube';
import type { Logger } from '@aro/observability';
import { MANAGER, OTHERS, release } from './cleanup-protection';
import type { ScaleSetContext } from './runner-scale-set-context';

const KINDS: readonly ResourceKind[] = [SecretKind, ServiceAccountKind, RoleKind, RoleBindingKind];

/** `Kind/name` of every object the set's `actions.github.com/cleanup-*` annotations name. */
export function namedObjects(ars: AutoscalingRunnerSet): Set<string> {
  const named = new Set<string>();
  for (const { annotation, kind } of [...OTHERS, ...MANAGER]) {
    const name = ars.metadata?.annotations?.[annotation];
    if (name) named.add(`${kind.kind}/${name}`);
  }
  return named;
}

/**
 * GitOps-safe cleanup (upstream #3440): an object the scale-set chart made carries the
 * `actions.github.com/cleanup-protection` finalizer, which the set lifts only when it goes. A values
 * change that drops the object (dind to kubernetes mode, a Secret renamed) or an Argo CD prune deletes
 * it while the set lives on, and it stayed Terminating for ever. The set now releases such an object:
 * one of its chart's (labelled with its scale-set name and namespace), being deleted, that none of its
 * cleanup annotations names any more. An object the set still names keeps its protection, and one not
 * being deleted is left alone (a helm upgrade may create the new object before the set names it).
 *
 * The objects are listed (four LISTs in the set's namespace, by label) when the set's cleanup
 * annotations change and otherwise with the periodic scale set check, not on every pass: the runner
 * counts moving wake the set far more often than a chart changes.
 */
export class ForgottenProtection {
  private readonly lastNamed: KeyedStore<string>;
  private readonly lastSwept: KeyedStore<number>;

  constructor(private readonly ctx: Pick<ScaleSetContext, 'client' | 'cache' | 'memory' | 'now' | 'opts'>) {
    this.lastNamed = ctx.memory.slot('cleanup objects named');
    this.lastSwept = ctx.memory.slot('cleanup objects swept');
  }

  async sweep(ars: AutoscalingRunnerSet, key: string, log: Logger): Promise<void> {
    const named = namedObjects(ars);
    const signature = [...named].sort().join(',');
    const due =
      this.lastNamed.get(key) !== signature ||
      this.ctx.now() - (this.lastSwept.get(key) ?? 0) >= this.ctx.opts.scaleSetCheckIntervalMs;
    if (!due) return;
    this.lastNamed.set(key, signature);
    this.lastSwept.set(key, this.ctx.now());
    const namespace = ars.metadata?.namespace ?? '';
    const scaleSetName = ars.metadata?.labels?.[Labels.scaleSetName] ?? ars.metadata?.name ?? '';
    const labelSelector = `${Labels.scaleSetName}=${scaleSetName},${Labels.scaleSetNamespace}=${namespace}`;
    for (const kind of KINDS) {
      let objects: KubeObject[];
      try {
        objects = await this.ctx.client.list<KubeObject>(kind, { namespace, labelSelector });
      } catch (err) {
        log.warn('Cannot list chart-created objects to release the protection of those dropped', {
          kind: kind.kind,
          err: err instanceof Error ? err.message : String(err),
        });
        continue;
      }
      for (const object of objects) {
        const name = object.metadata?.name ?? '';
        if (
          !object.metadata?.deletionTimestamp ||
          !object.metadata.finalizers?.includes(CLEANUP_PROTECTION_FINALIZER) ||
          named.has(`${kind.kind}/${name}`)
        ) {
          continue;
        }
        log.info('Releasing a chart-created object the set no longer names; it is being deleted', {
          kind: kind.kind,
          object: name,
        });
        await release(this.ctx.client, namespace, kind, object, log);
      }
    }
  }
}
