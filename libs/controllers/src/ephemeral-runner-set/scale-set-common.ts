import type { V1OwnerReference } from '@kubernetes/client-node';
import { Labels, ScaleSetCondition, trimLabelValue } from '@aro/api';
import { parseGitHubConfigUrl } from '@aro/actions';
import type { KubeObject } from '@aro/kube';

/*
 * Small pieces the three scale-set controllers (EphemeralRunnerSet, AutoscalingRunnerSet,
 * AutoscalingListener) share: owner references, finalizer lists, label propagation, GitHub URL labels
 * and status conditions.
 */

export function describeError(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export function objectKey(obj: KubeObject): string {
  return `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
}

export function hasFinalizer(obj: KubeObject, finalizer: string): boolean {
  return obj.metadata?.finalizers?.includes(finalizer) ?? false;
}

/**
 * A merge patch that sets the finalizer list, guarded by the resourceVersion read: a list is replaced
 * as a whole by a merge patch, so without the guard a concurrent writer's finalizer could be lost.
 */
export function finalizersPatch(obj: KubeObject, finalizers: string[]): object {
  return { metadata: { finalizers, resourceVersion: obj.metadata?.resourceVersion } };
}

export function withFinalizer(obj: KubeObject, finalizer: string): string[] {
  const current = obj.metadata?.finalizers ?? [];
  return current.includes(finalizer) ? current : [...current, finalizer];
}

export function withoutFinalizer(obj: KubeObject, finalizer: string): string[] {
  return (obj.metadata?.finalizers ?? []).filter((f) => f !== finalizer);
}

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

export function isControlledBy(obj: KubeObject, owner: KubeObject): boolean {
  return (
    obj.metadata?.ownerReferences?.some(
      (ref) => ref.controller === true && ref.uid === owner.metadata?.uid,
    ) ?? false
  );
}

/**
 * Labels copied onto a created object, less those whose key starts with one of the excluded prefixes
 * (upstream's `--exclude-label-propagation-prefix`, e.g. Argo CD's tracking label, which would make
 * Argo adopt the controller's objects). Later sources win.
 */
export function propagatedLabels(
  excludePrefixes: readonly string[],
  ...sources: Array<Record<string, string> | undefined>
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const source of sources) {
    for (const [key, value] of Object.entries(source ?? {})) {
      if (excludePrefixes.some((prefix) => prefix !== '' && key.startsWith(prefix))) continue;
      out[key] = value;
    }
  }
  return out;
}

export function mergedAnnotations(
  ...sources: Array<Record<string, string> | undefined>
): Record<string, string> {
  return Object.assign({}, ...sources.map((s) => s ?? {})) as Record<string, string>;
}

/** `actions.github.com/{enterprise,organization,repository}` from the config URL, trimmed to label values. */
export function githubUrlLabels(configUrl: string | undefined): Record<string, string> {
  if (!configUrl) return {};
  try {
    const config = parseGitHubConfigUrl(configUrl);
    const labels: Record<string, string> = {};
    if (config.enterprise) labels[Labels.enterprise] = trimLabelValue(config.enterprise);
    if (config.organization) labels[Labels.organization] = trimLabelValue(config.organization);
    if (config.repository) labels[Labels.repository] = trimLabelValue(config.repository);
    return labels;
  } catch {
    return {};
  }
}

/** Upstream's metric labels of a scale set: its name and namespace, and the parts of its config URL. */
export interface ScaleSetMetricLabels {
  name: string;
  namespace: string;
  repository: string;
  organization: string;
  enterprise: string;
}

export const SCALE_SET_METRIC_LABELS = [
  'name',
  'namespace',
  'repository',
  'organization',
  'enterprise',
] as const;

export function scaleSetMetricLabels(
  name: string,
  namespace: string,
  configUrl: string | undefined,
): ScaleSetMetricLabels {
  let repository = '';
  let organization = '';
  let enterprise = '';
  try {
    if (configUrl) ({ repository, organization, enterprise } = parseGitHubConfigUrl(configUrl));
  } catch {
    // An invalid URL is reported by the reconciler; the gauges still count the set.
  }
  return { name, namespace, repository, organization, enterprise };
}

/**
 * The conditions with `next` set: the transition time moves only when the status flips, so a
 * condition rewritten with the same status does not look like a new event.
 */
export function setCondition(
  conditions: readonly ScaleSetCondition[] | undefined,
  next: Omit<ScaleSetCondition, 'lastTransitionTime'>,
  now: Date = new Date(),
): ScaleSetCondition[] {
  const current = conditions ?? [];
  const previous = current.find((c) => c.type === next.type);
  const lastTransitionTime =
    previous && previous.status === next.status
      ? previous.lastTransitionTime
      : now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  const updated: ScaleSetCondition = { ...next, lastTransitionTime };
  return previous ? current.map((c) => (c.type === next.type ? updated : c)) : [...current, updated];
}

export function findCondition(
  conditions: readonly ScaleSetCondition[] | undefined,
  type: string,
): ScaleSetCondition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** Exponential backoff: base, 2x base, 4x base ... capped. `attempt` counts from 1. */
export function exponentialBackoffMs(attempt: number, baseMs: number, maxMs: number): number {
  if (attempt <= 0) return 0;
  return Math.min(maxMs, baseMs * 2 ** Math.min(attempt - 1, 30));
}
