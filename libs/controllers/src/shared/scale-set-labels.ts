import { Labels, trimLabelValue } from '@aro/api';
import { parseGitHubConfigUrl } from '@aro/actions';

/*
 * The labels and annotations the three scale-set controllers (EphemeralRunnerSet,
 * AutoscalingRunnerSet, AutoscalingListener) put on what they create, and the metric labels of a scale
 * set. Owner references and finalizer lists are the runtime's (`@aro/kube`).
 */

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
