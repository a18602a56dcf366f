import { existsSync, readFileSync } from 'node:fs';
import type { KubernetesObject, V1Pod, V1Secret } from '@kubernetes/client-node';
import {
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
  Labels,
} from '@aro/api';
import { KubeClient, PodKind, SecretKind } from '@aro/kube';
import { CONTROLLER_NAMESPACE, RUNNER_NAMESPACE } from './charts';

// What the sandbox counts and looks at, apart from the run itself.
// Writes that are not the product's: the kubelet player's pod status and binding, lease renewals (they
// follow the clock rather than the workload), and the sandbox's own identity checks.
const NOT_PRODUCT_WRITES =
  /^(POST|PUT|PATCH|DELETE|APPLY) (pods\/status|pods\/binding|leases|selfsubjectreviews|selfsubjectaccessreviews)$/;

export function kubeWrites(delta: Map<string, number>): number {
  let writes = 0;
  for (const [key, n] of delta) {
    if (/^(POST|PUT|PATCH|DELETE|DELETECOLLECTION|APPLY) /.test(key) && !NOT_PRODUCT_WRITES.test(key))
      writes += n;
  }
  return writes;
}

/**
 * What the logs of `logFile` say was refused by RBAC (the chart's roles lack a right the app uses):
 * the error's message of each such line, as the app logged it.
 */
export function forbiddenLines(logFile: string): string[] {
  if (!existsSync(logFile)) return [];
  return readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((line) => /forbidden/i.test(line))
    .map((line) => {
      try {
        const entry = JSON.parse(line) as { message?: string; error?: string };
        return entry.error ?? entry.message ?? line;
      } catch {
        return line;
      }
    });
}

/** Pods in the two namespaces the product works in: runner pods and listener pods. */
export async function podsIn(kube: KubeClient, labelSelector?: string): Promise<V1Pod[]> {
  const lists = await Promise.all(
    [RUNNER_NAMESPACE, CONTROLLER_NAMESPACE].map((namespace) =>
      kube.list<V1Pod>(PodKind, { namespace, labelSelector }),
    ),
  );
  return lists.flat();
}

/** Secrets in the same two: JIT configs, listener configs and the chart's GitHub secret. */
export async function secretsIn(kube: KubeClient): Promise<V1Secret[]> {
  const lists = await Promise.all(
    [RUNNER_NAMESPACE, CONTROLLER_NAMESPACE].map((namespace) =>
      kube.list<V1Secret>(SecretKind, { namespace }),
    ),
  );
  return lists.flat();
}

/**
 * Whether an object was made for scale set `scaleSet` (the sandbox's release): by its chart (named in
 * `chartObjects`, `Kind/name`), or by the product for it, which labels what it makes with the scale
 * set's name or owns it by an object of the actions.github.com API named after the scale set (a runner
 * pod and its JIT secret by their EphemeralRunner, a listener's pod and config by their
 * AutoscalingListener). What a person applied during --keep (examples/manifests, a set of their own) is
 * theirs: not waited for, and not counted as left.
 */
export function madeForScaleSet(
  object: KubernetesObject,
  scaleSet: string,
  chartObjects: readonly string[],
): boolean {
  const meta = object.metadata;
  if (chartObjects.includes(`${object.kind}/${meta?.name}`)) return true;
  if (meta?.labels?.[Labels.scaleSetName] === scaleSet) return true;
  return (meta?.ownerReferences ?? []).some(
    (o) =>
      o.apiVersion.startsWith('actions.github.com/') &&
      (o.name === scaleSet || o.name.startsWith(`${scaleSet}-`)),
  );
}

/** The pods and secrets made for the scale set that are still there (`Kind/namespace/name`). */
export async function leftOf(
  kube: KubeClient,
  scaleSet: string,
  chartObjects: readonly string[],
): Promise<{ pods: string[]; secrets: string[] }> {
  const named = (kind: string, list: Array<V1Pod | V1Secret>): string[] =>
    list
      .filter((o) => madeForScaleSet({ ...o, kind }, scaleSet, chartObjects))
      .map((o) => `${kind}/${o.metadata?.namespace}/${o.metadata?.name}`);
  return { pods: named('Pod', await podsIn(kube)), secrets: named('Secret', await secretsIn(kube)) };
}

/** The desired count: the EphemeralRunnerSet's replicas, as the listener asked. */
export async function desiredReplicas(kube: KubeClient): Promise<number> {
  const sets = await kube.list<EphemeralRunnerSet>(EphemeralRunnerSetKind, { namespace: RUNNER_NAMESPACE });
  return sets.reduce((sum, s) => sum + (s.spec?.replicas ?? 0), 0);
}

/**
 * Each AutoscalingRunnerSet's leak audit (`status.orphanSweep`, what `kubectl describe` shows), one line
 * per set: read at the end of the workload, before the uninstall removes the sets.
 */
export async function leakAudits(kube: KubeClient): Promise<string[]> {
  const sets = await kube.list<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, {
    namespace: RUNNER_NAMESPACE,
  });
  return sets.map((ars) => {
    const a = ars.status?.orphanSweep;
    const figures = a
      ? `registrations ${a.registrations}, runners ${a.runners}, orphans ${a.orphans}, removed ${a.orphansRemoved} (pass ${a.lastPassTime})`
      : 'no audit yet';
    return `${ars.metadata?.name}: ${figures}`;
  });
}
