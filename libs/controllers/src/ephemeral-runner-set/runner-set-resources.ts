import type { V1Secret } from '@kubernetes/client-node';
import {
  API_VERSION,
  Annotations,
  EPHEMERAL_RUNNER_ACTIONS_FINALIZER,
  EPHEMERAL_RUNNER_FINALIZER,
  EnvVars,
  EphemeralRunner,
  EphemeralRunnerSet,
  LabelValues,
  Labels,
  runnerProxySecretName,
} from '@aro/api';
import type { ProxySettings } from '@aro/actions';
import { controllerReference } from '@aro/kube';
import { mergedAnnotations, propagatedLabels } from '../shared/scale-set-labels';

/**
 * A new EphemeralRunner of the set: `generateName: <set>-runner-`, the set's labels (component
 * `runner`) and annotations plus `ephemeralRunnerMetadata`, the patch it was created for, both runner
 * finalizers from the start (so a runner deleted before its first reconcile still releases whatever
 * it registers), and the set as controller.
 */
export function buildEphemeralRunner(
  set: EphemeralRunnerSet,
  excludeLabelPrefixes: readonly string[],
): EphemeralRunner {
  const name = set.metadata?.name ?? '';
  const spec = { ...set.spec.ephemeralRunnerSpec };
  if (spec.proxy) spec.proxySecretRef = runnerProxySecretName(name, set.metadata?.namespace ?? '');
  const annotations = mergedAnnotations(
    set.metadata?.annotations,
    set.spec.ephemeralRunnerMetadata?.annotations,
  );
  delete annotations[Annotations.integrityHash];
  delete annotations['kubectl.kubernetes.io/last-applied-configuration'];
  annotations[Annotations.patchId] = String(set.spec.patchID ?? 0);
  return {
    apiVersion: API_VERSION,
    kind: 'EphemeralRunner',
    metadata: {
      generateName: `${name}-runner-`,
      namespace: set.metadata?.namespace,
      labels: {
        ...propagatedLabels(
          excludeLabelPrefixes,
          set.metadata?.labels,
          set.spec.ephemeralRunnerMetadata?.labels,
        ),
        [Labels.component]: LabelValues.componentRunner,
      },
      annotations,
      finalizers: [EPHEMERAL_RUNNER_FINALIZER, EPHEMERAL_RUNNER_ACTIONS_FINALIZER],
      ownerReferences: [controllerReference(set, 'EphemeralRunnerSet', API_VERSION)],
    },
    spec,
  };
}

/** The runner pods' proxy variables, credentials in the URLs, as the runner reads them. */
export function proxySecretData(settings: ProxySettings | undefined): Record<string, string> {
  const data: Record<string, string> = {};
  if (settings?.http) data[EnvVars.httpProxy] = settings.http;
  if (settings?.https) data[EnvVars.httpsProxy] = settings.https;
  if (settings?.noProxy?.length) data[EnvVars.noProxy] = settings.noProxy.join(',');
  return data;
}

export function buildRunnerProxySecret(set: EphemeralRunnerSet, data: Record<string, string>): V1Secret {
  const name = set.metadata?.name ?? '';
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: runnerProxySecretName(name, set.metadata?.namespace ?? ''),
      namespace: set.metadata?.namespace,
      labels: {
        [Labels.partOf]: LabelValues.partOf,
        [Labels.scaleSetName]: set.metadata?.labels?.[Labels.scaleSetName] ?? name,
        [Labels.scaleSetNamespace]: set.metadata?.namespace ?? '',
      },
      ownerReferences: [controllerReference(set, 'EphemeralRunnerSet', API_VERSION)],
    },
    stringData: data,
  };
}
