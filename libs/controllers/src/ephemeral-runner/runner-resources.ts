import { createHash } from 'node:crypto';
import type { V1Container, V1EnvVar, V1OwnerReference, V1Pod, V1Secret } from '@kubernetes/client-node';
import {
  EPHEMERAL_RUNNER_CONTAINER_NAME,
  EnvVars,
  EphemeralRunner,
  EphemeralRunnerKind,
  JitSecretKeys,
  LabelValues,
  Labels,
  apiVersionOf,
} from '@aro/api';
import type { RunnerScaleSetJitRunnerConfig } from '@aro/actions';

export interface RunnerResourceOptions {
  /** Sent by the runner in its User-Agent, so GitHub-side logs say which operator started it. */
  userAgent: string;
}

function controllerReference(runner: EphemeralRunner): V1OwnerReference {
  return {
    apiVersion: apiVersionOf(EphemeralRunnerKind),
    kind: EphemeralRunnerKind.kind,
    name: runner.metadata?.name ?? '',
    uid: runner.metadata?.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

function shortHash(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 10);
}

/**
 * The secret holding the runner's JIT configuration. It is the durable record of the registration
 * from the moment the service creates it until the status publishes the runner ID, which is why the
 * ID and name are stored beside the token.
 */
export function buildJitSecret(runner: EphemeralRunner, jit: RunnerScaleSetJitRunnerConfig): V1Secret {
  const meta = runner.spec.ephemeralRunnerConfigSecretMetadata;
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: runner.metadata?.name,
      namespace: runner.metadata?.namespace,
      labels: meta?.labels ? { ...meta.labels } : undefined,
      annotations: meta?.annotations ? { ...meta.annotations } : undefined,
      ownerReferences: [controllerReference(runner)],
    },
    type: 'Opaque',
    stringData: {
      [JitSecretKeys.jitToken]: jit.encodedJITConfig,
      [JitSecretKeys.runnerName]: jit.runner.name,
      [JitSecretKeys.runnerId]: String(jit.runner.id),
      [JitSecretKeys.scaleSetId]: String(jit.runner.runnerScaleSetId),
    },
  };
}

/**
 * Proxy variables for the runner container, read from the proxy secret the EphemeralRunnerSet
 * materialises. Only the parts the spec configures are set: an absent key in a secretKeyRef would
 * keep the pod from starting.
 */
export function proxyEnv(runner: EphemeralRunner): V1EnvVar[] {
  const secretName = runner.spec.proxySecretRef;
  if (!secretName) return [];
  const fromSecret = (name: string): V1EnvVar => ({
    name,
    valueFrom: { secretKeyRef: { name: secretName, key: name } },
  });
  const env: V1EnvVar[] = [];
  if (runner.spec.proxy?.http) env.push(fromSecret(EnvVars.httpProxy));
  if (runner.spec.proxy?.https) env.push(fromSecret(EnvVars.httpsProxy));
  if ((runner.spec.proxy?.noProxy ?? []).length > 0) env.push(fromSecret(EnvVars.noProxy));
  return env;
}

/**
 * The runner pod: the EphemeralRunner's pod template, named after the runner, owned by it, with the
 * JIT configuration and the operator's settings injected into the `runner` container only.
 */
export function buildRunnerPod(
  runner: EphemeralRunner,
  secret: V1Secret,
  opts: RunnerResourceOptions,
  extraEnv: V1EnvVar[] = [],
): V1Pod {
  const template = runner.spec;
  const labels: Record<string, string> = {
    ...(template.metadata?.labels ?? {}),
    ...(runner.metadata?.labels ?? {}),
  };
  const annotations: Record<string, string> = {
    ...(template.metadata?.annotations ?? {}),
    ...(runner.metadata?.annotations ?? {}),
  };
  labels[Labels.ephemeralRunnerPod] = LabelValues.ephemeralRunnerPod;
  labels[Labels.podTemplateHash] = shortHash({ labels, annotations, spec: template.spec });

  const containers: V1Container[] = (template.spec?.containers ?? []).map((container) => {
    if (container.name !== EPHEMERAL_RUNNER_CONTAINER_NAME) return { ...container };
    return {
      ...container,
      env: [
        ...(container.env ?? []),
        {
          name: EnvVars.runnerJitConfig,
          valueFrom: { secretKeyRef: { name: secret.metadata?.name ?? '', key: JitSecretKeys.jitToken } },
        },
        { name: EnvVars.runnerExtraUserAgent, value: opts.userAgent },
        // Makes a runner whose version the service no longer accepts exit 7 instead of 0, so that it is
        // recorded as Outdated rather than mistaken for a finished job.
        { name: EnvVars.runnerReturnVersionDeprecatedExitCode, value: '1' },
        ...extraEnv,
      ],
    };
  });

  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: runner.metadata?.name,
      namespace: runner.metadata?.namespace,
      labels,
      annotations,
      ownerReferences: [controllerReference(runner)],
    },
    spec: { ...(template.spec ?? { containers: [] }), containers },
  };
}
