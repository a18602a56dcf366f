import { Annotations, AutoscalingRunnerSet, CLEANUP_PROTECTION_FINALIZER, ResourceKind } from '@aro/api';
import {
  KubeApi,
  KubeObject,
  RoleBindingKind,
  RoleKind,
  SecretKind,
  ServiceAccountKind,
  isForbidden,
  isNotFound,
  finalizersPatch,
  hasFinalizer,
  withoutFinalizers,
} from '@aro/kube';
import type { Logger } from '@aro/observability';

/**
 * The objects the gha-runner-scale-set chart creates beside the AutoscalingRunnerSet, named in its
 * `actions.github.com/cleanup-*` annotations. The chart protects them with a finalizer so that
 * `helm uninstall` cannot pull the credentials and permissions from under a set that is still
 * releasing its runners; the set lets them go once it has (upstream's order: bindings before roles,
 * the secret last but one, the manager's own permissions last).
 */
export const OTHERS: ReadonlyArray<{ annotation: string; kind: ResourceKind }> = [
  { annotation: Annotations.cleanupKubernetesModeRoleBindingName, kind: RoleBindingKind },
  { annotation: Annotations.cleanupKubernetesModeRoleName, kind: RoleKind },
  { annotation: Annotations.cleanupKubernetesModeServiceAccountName, kind: ServiceAccountKind },
  { annotation: Annotations.cleanupNoPermissionServiceAccountName, kind: ServiceAccountKind },
  { annotation: Annotations.cleanupGitHubSecretName, kind: SecretKind },
];

/**
 * The manager Role and its binding: they grant the controller its rights in the set's namespace
 * (secrets, service accounts, roles). Once helm has deleted them and their protection is lifted, those
 * rights are gone, so they go last, and the controller reads and patches them through the rights its
 * own chart gives it on roles and role bindings everywhere (get, patch), never through themselves.
 */
export const MANAGER: ReadonlyArray<{ annotation: string; kind: ResourceKind }> = [
  { annotation: Annotations.cleanupManagerRoleBinding, kind: RoleBindingKind },
  { annotation: Annotations.cleanupManagerRoleName, kind: RoleKind },
];

type Protected = { annotation: string; kind: ResourceKind };

/** The object still carrying the protection, or undefined when it is gone or already released. */
async function stillProtected(
  client: KubeApi,
  namespace: string,
  { annotation, kind }: Protected,
  ars: AutoscalingRunnerSet,
): Promise<KubeObject | undefined> {
  const name = ars.metadata?.annotations?.[annotation];
  if (!name) return undefined;
  try {
    const object = await client.get<KubeObject>(kind, namespace, name);
    return hasFinalizer(object, CLEANUP_PROTECTION_FINALIZER) ? object : undefined;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

export async function release(
  client: KubeApi,
  namespace: string,
  kind: ResourceKind,
  object: KubeObject,
  log: Logger,
): Promise<void> {
  const name = object.metadata?.name ?? '';
  try {
    await client.mergePatch(
      kind,
      namespace,
      name,
      finalizersPatch(object, withoutFinalizers(object, CLEANUP_PROTECTION_FINALIZER)),
    );
    log.info('Removed the cleanup protection of a chart-created object', { kind: kind.kind, object: name });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/**
 * Lifts the protection of every chart-created object of the set, the manager's two last. A pass cut
 * short after it released one of the manager's objects (a crash, a conflict) finds, on the next pass,
 * the others refused to it: the rights to read them left with the manager's binding. It released them
 * before it touched the manager's, so a refusal then means done, not a failure; any other time it is.
 */
export async function removeCleanupProtection(
  client: KubeApi,
  ars: AutoscalingRunnerSet,
  log: Logger,
): Promise<void> {
  const namespace = ars.metadata?.namespace ?? '';
  const manager = await Promise.all(MANAGER.map((m) => stillProtected(client, namespace, m, ars)));
  const managerReleased = MANAGER.some((m, i) => ars.metadata?.annotations?.[m.annotation] && !manager[i]);
  for (const other of OTHERS) {
    try {
      const object = await stillProtected(client, namespace, other, ars);
      if (object) await release(client, namespace, other.kind, object, log);
    } catch (err) {
      if (!(managerReleased && isForbidden(err))) throw err;
      log.debug('Chart-created object no longer readable after the manager Role went; released before it', {
        kind: other.kind.kind,
        object: ars.metadata?.annotations?.[other.annotation],
      });
    }
  }
  for (const [i, m] of MANAGER.entries()) {
    const object = manager[i];
    if (object) await release(client, namespace, m.kind, object, log);
  }
}
