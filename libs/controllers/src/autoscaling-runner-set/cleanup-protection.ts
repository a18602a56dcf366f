import { Annotations, AutoscalingRunnerSet, CLEANUP_PROTECTION_FINALIZER, ResourceKind } from '@aro/api';
import {
  KubeClient,
  KubeObject,
  RoleBindingKind,
  RoleKind,
  SecretKind,
  ServiceAccountKind,
  isNotFound,
} from '@aro/kube';
import type { Logger } from '@aro/observability';
import { finalizersPatch, withoutFinalizer } from '../ephemeral-runner-set/scale-set-common';

/**
 * The objects the gha-runner-scale-set chart creates beside the AutoscalingRunnerSet, named in its
 * `actions.github.com/cleanup-*` annotations. The chart protects them with a finalizer so that
 * `helm uninstall` cannot pull the credentials and permissions from under a set that is still
 * releasing its runners; the set lets them go once it has (upstream's order: bindings before roles,
 * the secret last but one, the manager's own permissions last).
 */
const PROTECTED: ReadonlyArray<{ annotation: string; kind: ResourceKind }> = [
  { annotation: Annotations.cleanupKubernetesModeRoleBindingName, kind: RoleBindingKind },
  { annotation: Annotations.cleanupKubernetesModeRoleName, kind: RoleKind },
  { annotation: Annotations.cleanupKubernetesModeServiceAccountName, kind: ServiceAccountKind },
  { annotation: Annotations.cleanupNoPermissionServiceAccountName, kind: ServiceAccountKind },
  { annotation: Annotations.cleanupGitHubSecretName, kind: SecretKind },
  { annotation: Annotations.cleanupManagerRoleBinding, kind: RoleBindingKind },
  { annotation: Annotations.cleanupManagerRoleName, kind: RoleKind },
];

export async function removeCleanupProtection(
  client: KubeClient,
  ars: AutoscalingRunnerSet,
  log: Logger,
): Promise<void> {
  const namespace = ars.metadata?.namespace ?? '';
  for (const { annotation, kind } of PROTECTED) {
    const name = ars.metadata?.annotations?.[annotation];
    if (!name) continue;
    let object: KubeObject;
    try {
      object = await client.get<KubeObject>(kind, namespace, name);
    } catch (err) {
      if (isNotFound(err)) continue;
      throw err;
    }
    if (!object.metadata?.finalizers?.includes(CLEANUP_PROTECTION_FINALIZER)) continue;
    try {
      await client.mergePatch(
        kind,
        namespace,
        name,
        finalizersPatch(object, withoutFinalizer(object, CLEANUP_PROTECTION_FINALIZER)),
      );
      log.info('Removed the cleanup protection of a chart-created object', { kind: kind.kind, object: name });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}
