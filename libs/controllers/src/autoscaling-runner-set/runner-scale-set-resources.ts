import {
  WarmHeadroomAnnotations,
  API_VERSION,
  Annotations,
  AutoscalingListener,
  AutoscalingRunnerSet,
  DEFAULT_RUNNER_GROUP,
  EphemeralRunnerSet,
  EphemeralRunnerSpec,
  LabelValues,
  Labels,
  autoscalingListenerName,
  integrityHash,
} from '@aro/api';
import { controllerReference } from '@aro/kube';
import { githubUrlLabels, mergedAnnotations, propagatedLabels } from '../shared/scale-set-labels';

/** Upstream gives a listener of a set without maxRunners this bound (Go's math.MaxInt32). */
export const UNBOUNDED_MAX_RUNNERS = 2_147_483_647;

export function scaleSetName(ars: AutoscalingRunnerSet): string {
  return ars.spec.runnerScaleSetName || ars.metadata?.name || '';
}

export function runnerGroupName(ars: AutoscalingRunnerSet): string {
  return ars.spec.runnerGroup || DEFAULT_RUNNER_GROUP;
}

export function listenerNameOf(ars: AutoscalingRunnerSet): string {
  return autoscalingListenerName(
    ars.metadata?.name ?? '',
    ars.metadata?.namespace ?? '',
    ars.spec.runnerGroup ?? '',
    ars.spec.githubConfigUrl ?? '',
  );
}

/** The scale set's ID on the Actions service, from the `runner-scale-set-id` annotation; 0 when absent. */
export function scaleSetIdOf(ars: AutoscalingRunnerSet): number {
  const id = Number.parseInt(ars.metadata?.annotations?.[Annotations.runnerScaleSetId] ?? '', 10);
  return Number.isFinite(id) && id > 0 ? id : 0;
}

/** What the AutoscalingRunnerSet's `integrity-hash` covers: its spec and its labels (upstream's Hash()). */
export function runnerScaleSetHash(ars: AutoscalingRunnerSet): string {
  return integrityHash({ spec: ars.spec, labels: ars.metadata?.labels ?? {} });
}

function scaleSetLabels(
  ars: AutoscalingRunnerSet,
  excludePrefixes: readonly string[],
): Record<string, string> {
  return {
    ...propagatedLabels(excludePrefixes, ars.metadata?.labels),
    [Labels.scaleSetName]: ars.metadata?.name ?? '',
    [Labels.scaleSetNamespace]: ars.metadata?.namespace ?? '',
    ...githubUrlLabels(ars.spec.githubConfigUrl),
  };
}

export function desiredRunnerSpec(ars: AutoscalingRunnerSet, scaleSetId: number): EphemeralRunnerSpec {
  const spec: EphemeralRunnerSpec = {
    githubConfigUrl: ars.spec.githubConfigUrl ?? '',
    githubConfigSecret: ars.spec.githubConfigSecret ?? '',
    runnerScaleSetId: scaleSetId,
    metadata: ars.spec.template?.metadata,
    spec: ars.spec.template?.spec,
  };
  if (ars.spec.proxy) spec.proxy = ars.spec.proxy;
  if (ars.spec.githubServerTLS) spec.githubServerTLS = ars.spec.githubServerTLS;
  if (ars.spec.vaultConfig) spec.vaultConfig = ars.spec.vaultConfig;
  if (ars.spec.ephemeralRunnerConfigSecretMetadata) {
    spec.ephemeralRunnerConfigSecretMetadata = ars.spec.ephemeralRunnerConfigSecretMetadata;
  }
  return JSON.parse(JSON.stringify(spec)) as EphemeralRunnerSpec;
}

export function desiredRunnerSetMeta(
  ars: AutoscalingRunnerSet,
  excludePrefixes: readonly string[],
): { labels: Record<string, string>; annotations: Record<string, string> } {
  return {
    labels: {
      ...scaleSetLabels(ars, excludePrefixes),
      ...propagatedLabels(excludePrefixes, ars.spec.ephemeralRunnerSetMetadata?.labels),
      [Labels.component]: LabelValues.componentRunnerSet,
    },
    annotations: mergedAnnotations(ars.spec.ephemeralRunnerSetMetadata?.annotations, {
      [Annotations.runnerGroupName]:
        ars.metadata?.annotations?.[Annotations.runnerGroupName] ?? runnerGroupName(ars),
      [Annotations.runnerScaleSetName]:
        ars.metadata?.annotations?.[Annotations.runnerScaleSetName] ?? scaleSetName(ars),
    }),
  };
}

/** The EphemeralRunnerSet of a scale set: same name and namespace, no replicas until the listener asks. */
export function buildEphemeralRunnerSet(
  ars: AutoscalingRunnerSet,
  scaleSetId: number,
  excludePrefixes: readonly string[],
): EphemeralRunnerSet {
  const meta = desiredRunnerSetMeta(ars, excludePrefixes);
  return {
    apiVersion: API_VERSION,
    kind: 'EphemeralRunnerSet',
    metadata: {
      name: ars.metadata?.name,
      namespace: ars.metadata?.namespace,
      labels: meta.labels,
      annotations: meta.annotations,
      ownerReferences: [controllerReference(ars, 'AutoscalingRunnerSet', API_VERSION)],
    },
    spec: {
      replicas: 0,
      patchID: 0,
      ephemeralRunnerSpec: desiredRunnerSpec(ars, scaleSetId),
      ...(ars.spec.ephemeralRunnerMetadata
        ? { ephemeralRunnerMetadata: ars.spec.ephemeralRunnerMetadata }
        : {}),
    },
  };
}

export interface ListenerSettings {
  controllerNamespace: string;
  listenerImage: string;
  imagePullSecrets: readonly string[];
  excludeLabelPropagationPrefixes: readonly string[];
}

/**
 * The AutoscalingListener of a scale set, in the controller's namespace (so no owner reference: the
 * AutoscalingRunnerSet controller deletes it itself). Its `integrity-hash` covers spec, labels and
 * annotations; any change recreates the listener.
 */
export function buildAutoscalingListener(
  ars: AutoscalingRunnerSet,
  scaleSetId: number,
  settings: ListenerSettings,
  /** The set it scales: named after the scale set, unless one of upstream 0.14's was taken over. */
  runnerSetName: string = ars.metadata?.name ?? '',
): AutoscalingListener {
  const spec: AutoscalingListener['spec'] = JSON.parse(
    JSON.stringify({
      githubConfigUrl: ars.spec.githubConfigUrl,
      githubConfigSecret: ars.spec.githubConfigSecret,
      runnerScaleSetId: scaleSetId,
      autoscalingRunnerSetNamespace: ars.metadata?.namespace,
      autoscalingRunnerSetName: ars.metadata?.name,
      ephemeralRunnerSetName: runnerSetName,
      maxRunners: ars.spec.maxRunners ?? UNBOUNDED_MAX_RUNNERS,
      minRunners: ars.spec.minRunners ?? 0,
      image: settings.listenerImage,
      imagePullSecrets: settings.imagePullSecrets.length
        ? settings.imagePullSecrets.map((name) => ({ name }))
        : undefined,
      proxy: ars.spec.proxy,
      githubServerTLS: ars.spec.githubServerTLS,
      vaultConfig: ars.spec.vaultConfig,
      metrics: ars.spec.listenerMetrics,
      template: ars.spec.listenerTemplate,
      configSecretMetadata: ars.spec.listenerConfigSecretMetadata,
      serviceAccountMetadata: ars.spec.listenerServiceAccountMetadata,
      roleMetadata: ars.spec.listenerRoleMetadata,
      roleBindingMetadata: ars.spec.listenerRoleBindingMetadata,
    }),
  ) as AutoscalingListener['spec'];
  const labels = {
    ...scaleSetLabels(ars, settings.excludeLabelPropagationPrefixes),
    ...propagatedLabels(settings.excludeLabelPropagationPrefixes, ars.spec.autoscalingListener?.labels),
    [Labels.component]: LabelValues.componentListener,
  };
  const annotations = mergedAnnotations(ars.spec.autoscalingListener?.annotations);
  // ARO's warm headroom rides on the listener (its config is built from the listener alone, in shared
  // mode too); in the hash, so a change recreates the listener with the new config, as a minRunners
  // change does. A set without them keeps its hash.
  for (const key of Object.values(WarmHeadroomAnnotations)) {
    const value = ars.metadata?.annotations?.[key];
    if (value !== undefined) annotations[key] = value;
  }
  annotations[Annotations.integrityHash] = integrityHash({ spec, labels, annotations });
  return {
    apiVersion: API_VERSION,
    kind: 'AutoscalingListener',
    metadata: {
      name: listenerNameOf(ars),
      namespace: settings.controllerNamespace,
      labels,
      annotations,
    },
    spec,
  };
}
