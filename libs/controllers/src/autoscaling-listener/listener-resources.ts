import { posix } from 'node:path';
import type {
  V1Container,
  V1ObjectMeta,
  V1Pod,
  V1Role,
  V1RoleBinding,
  V1Secret,
  V1ServiceAccount,
} from '@kubernetes/client-node';
import {
  API_VERSION,
  AUTOSCALING_LISTENER_CONTAINER_NAME,
  Annotations,
  AutoscalingListener,
  EnvVars,
  GROUP,
  LabelValues,
  Labels,
  ListenerConfig,
  ListenerDefaults,
  integrityHash,
  listenerConfigSecretName,
} from '@aro/api';
import { controllerReference } from '@aro/kube';
import { mergedAnnotations } from '../shared/scale-set-labels';

const CONFIG_VOLUME = 'listener-config';

export interface ListenerPodSettings {
  metricsAddr: string;
  metricsEndpoint: string;
}

function listenerName(listener: AutoscalingListener): string {
  return listener.metadata?.name ?? '';
}

/** Labels every listener-owned object carries; the Role and RoleBinding are found by them. */
export function listenerOwnedLabels(listener: AutoscalingListener): Record<string, string> {
  return {
    [Labels.partOf]: LabelValues.partOf,
    [Labels.component]: LabelValues.componentListener,
    [Labels.scaleSetName]: listener.spec.autoscalingRunnerSetName ?? '',
    [Labels.scaleSetNamespace]: listener.spec.autoscalingRunnerSetNamespace ?? '',
    [Labels.autoscalingListenerName]: listenerName(listener),
    [Labels.autoscalingListenerNamespace]: listener.metadata?.namespace ?? '',
  };
}

/** Stamps `actions.github.com/integrity-hash` with the hash of what the object says. */
function withHash<T extends { metadata?: { annotations?: Record<string, string> } }>(
  object: T,
  hashed: unknown,
): T {
  object.metadata = object.metadata ?? {};
  object.metadata.annotations = {
    ...object.metadata.annotations,
    [Annotations.integrityHash]: integrityHash(hashed),
  };
  return object;
}

export function hashOf(
  object: { metadata?: { annotations?: Record<string, string> } } | undefined,
): string | undefined {
  return object?.metadata?.annotations?.[Annotations.integrityHash];
}

/**
 * The metadata of an object made for a listener: its labels and annotations from the listener's spec
 * with the listener's own labels on top (they are how the controller finds it again). In the
 * listener's namespace it is owned by the listener; in the scale set's, found by those labels.
 */
function listenerObjectMeta(
  listener: AutoscalingListener,
  meta: { labels?: Record<string, string>; annotations?: Record<string, string> } | undefined,
  where: { name: string; inScaleSetNamespace?: boolean },
): V1ObjectMeta {
  return {
    name: where.name,
    namespace: where.inScaleSetNamespace
      ? listener.spec.autoscalingRunnerSetNamespace
      : listener.metadata?.namespace,
    labels: { ...meta?.labels, ...listenerOwnedLabels(listener) },
    annotations: mergedAnnotations(meta?.annotations),
    ...(where.inScaleSetNamespace
      ? {}
      : { ownerReferences: [controllerReference(listener, 'AutoscalingListener', API_VERSION)] }),
  };
}

export function buildServiceAccount(listener: AutoscalingListener): V1ServiceAccount {
  const meta = listener.spec.serviceAccountMetadata;
  const sa: V1ServiceAccount = {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: listenerObjectMeta(listener, meta, { name: listenerName(listener) }),
  };
  return withHash(sa, { metadata: sa.metadata?.labels, annotations: meta?.annotations });
}

/**
 * What the listener may do in its scale set's namespace, and nothing more: patch its one
 * EphemeralRunnerSet (replicas and patchID) and patch EphemeralRunners and their status (the job
 * fields on JobStarted). A compromised listener cannot create pods or read secrets.
 */
export function buildRole(listener: AutoscalingListener): V1Role {
  const meta = listener.spec.roleMetadata;
  const role: V1Role = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: listenerObjectMeta(listener, meta, { name: listenerName(listener), inScaleSetNamespace: true }),
    rules: [
      {
        apiGroups: [GROUP],
        resources: ['ephemeralrunnersets'],
        resourceNames: [listener.spec.ephemeralRunnerSetName ?? ''],
        verbs: ['patch'],
      },
      { apiGroups: [GROUP], resources: ['ephemeralrunners', 'ephemeralrunners/status'], verbs: ['patch'] },
    ],
  };
  return withHash(role, { rules: role.rules, labels: role.metadata?.labels, annotations: meta?.annotations });
}

/**
 * Binds the listener's Role to its own ServiceAccount, or in shared mode to `sharedServiceAccount`
 * (the shared listener Deployment's, in the listeners' namespace).
 */
export function buildRoleBinding(
  listener: AutoscalingListener,
  sharedServiceAccount?: string,
): V1RoleBinding {
  const meta = listener.spec.roleBindingMetadata;
  const binding: V1RoleBinding = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: listenerObjectMeta(listener, meta, { name: listenerName(listener), inScaleSetNamespace: true }),
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: listenerName(listener) },
    subjects: [
      {
        kind: 'ServiceAccount',
        name: sharedServiceAccount || listenerName(listener),
        namespace: listener.metadata?.namespace,
      },
    ],
  };
  return withHash(binding, {
    roleRef: binding.roleRef,
    subjects: binding.subjects,
    labels: binding.metadata?.labels,
    annotations: meta?.annotations,
  });
}

export function buildConfigSecret(listener: AutoscalingListener, config: ListenerConfig): V1Secret {
  const meta = listener.spec.configSecretMetadata;
  const json = JSON.stringify(config);
  const secret: V1Secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: listenerObjectMeta(listener, meta, { name: listenerConfigSecretName(listenerName(listener)) }),
    stringData: { [ListenerDefaults.configSecretKey]: json },
  };
  return withHash(secret, { json, labels: secret.metadata?.labels, annotations: meta?.annotations });
}

function metricsPort(addr: string): number | undefined {
  if (addr === '' || addr === '0') return undefined;
  const port = Number.parseInt(addr.slice(addr.lastIndexOf(':') + 1), 10);
  return Number.isFinite(port) && port > 0 ? port : undefined;
}

/**
 * The listener pod: the `listener` container runs the ARO listener with its config mounted from the
 * config Secret, as the listener's own ServiceAccount, never restarted in place (the controller
 * recreates it, with backoff, so a failure is seen and counted), with 60 s to delete its message
 * session on the way out. A `spec.template` is the base; its `listener` container gets the
 * generated fields it does not set itself; its labels count where the listener has none of its own. The integrity hash covers the pod and the hashes of the
 * config, ServiceAccount, Role and RoleBinding, so any of them changing recreates the pod.
 */
export function buildListenerPod(
  listener: AutoscalingListener,
  settings: ListenerPodSettings,
  dependencyHashes: readonly (string | undefined)[],
): V1Pod {
  const template = listener.spec.template;
  const port = metricsPort(settings.metricsAddr);
  const generated: V1Container = {
    name: AUTOSCALING_LISTENER_CONTAINER_NAME,
    image: listener.spec.image,
    command: [...ListenerDefaults.command],
    env: [{ name: EnvVars.listenerConfigPath, value: ListenerDefaults.configPath }],
    volumeMounts: [
      { name: CONFIG_VOLUME, mountPath: posix.dirname(ListenerDefaults.configPath), readOnly: true },
    ],
    ...(port ? { ports: [{ name: 'metrics', containerPort: port, protocol: 'TCP' }] } : {}),
  };
  const templateSpec = template?.spec;
  const fromTemplate = templateSpec?.containers?.find((c) => c.name === AUTOSCALING_LISTENER_CONTAINER_NAME);
  const listenerContainer: V1Container = fromTemplate
    ? {
        ...generated,
        ...fromTemplate,
        image: fromTemplate.image || generated.image,
        command: fromTemplate.command?.length ? fromTemplate.command : generated.command,
        env: [...(generated.env ?? []), ...(fromTemplate.env ?? [])],
        volumeMounts: [...(generated.volumeMounts ?? []), ...(fromTemplate.volumeMounts ?? [])],
        ports: fromTemplate.ports?.length ? fromTemplate.ports : generated.ports,
      }
    : generated;
  const otherContainers = (templateSpec?.containers ?? []).filter(
    (c) => c.name !== AUTOSCALING_LISTENER_CONTAINER_NAME,
  );
  const pod: V1Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: listenerName(listener),
      namespace: listener.metadata?.namespace,
      // The listener's own labels (the scale set's, already less the excluded prefixes, and
      // spec.autoscalingListener's) win over the template's, as upstream: a NetworkPolicy or a
      // PodMonitor selecting the set's labels must find its listener pod.
      labels: {
        ...template?.metadata?.labels,
        ...listener.metadata?.labels,
        ...listenerOwnedLabels(listener),
      },
      annotations: mergedAnnotations(template?.metadata?.annotations),
      ownerReferences: [controllerReference(listener, 'AutoscalingListener', API_VERSION)],
    },
    spec: {
      ...templateSpec,
      serviceAccountName: listenerName(listener),
      restartPolicy: 'Never',
      terminationGracePeriodSeconds:
        templateSpec?.terminationGracePeriodSeconds ?? ListenerDefaults.terminationGracePeriodSeconds,
      nodeSelector: templateSpec?.nodeSelector ?? { [Labels.os]: LabelValues.osLinux },
      imagePullSecrets: [
        ...(templateSpec?.imagePullSecrets ?? []),
        ...(listener.spec.imagePullSecrets ?? []),
      ],
      containers: [listenerContainer, ...otherContainers],
      volumes: [
        ...(templateSpec?.volumes ?? []),
        { name: CONFIG_VOLUME, secret: { secretName: listenerConfigSecretName(listenerName(listener)) } },
      ],
    },
  };
  if (pod.spec?.imagePullSecrets?.length === 0) delete pod.spec.imagePullSecrets;
  return withHash(pod, { spec: pod.spec, labels: pod.metadata?.labels, dependencies: dependencyHashes });
}
