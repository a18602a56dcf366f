import type { KubernetesListObject, KubernetesObject, V1PodTemplateSpec } from '@kubernetes/client-node';
import type { MetricsConfig, ProxyConfig, ResourceMeta, TLSConfig, VaultConfig } from './shared-types';
import type { ScaleSetCondition } from './scale-set';

export const AutoscalingRunnerSetPhase = {
  /** The spec changed (integrity hash differs) and the controller has not rolled it out yet. */
  Pending: 'Pending',
  Running: 'Running',
  /** Its runners report a deprecated runner version. */
  Outdated: 'Outdated',
} as const;
export type AutoscalingRunnerSetPhase =
  (typeof AutoscalingRunnerSetPhase)[keyof typeof AutoscalingRunnerSetPhase];

export interface AutoscalingRunnerSetSpec {
  githubConfigUrl?: string;
  githubConfigSecret?: string;
  runnerGroup?: string;
  runnerScaleSetName?: string;
  runnerScaleSetLabels?: string[];
  proxy?: ProxyConfig;
  githubServerTLS?: TLSConfig;
  vaultConfig?: VaultConfig;
  /** The runner pod template. */
  template?: V1PodTemplateSpec;
  /** Labels/annotations for the AutoscalingListener resource (Go field AutoscalingListenerMetadata). */
  autoscalingListener?: ResourceMeta;
  listenerMetrics?: MetricsConfig;
  listenerTemplate?: V1PodTemplateSpec;
  listenerServiceAccountMetadata?: ResourceMeta;
  listenerRoleMetadata?: ResourceMeta;
  listenerRoleBindingMetadata?: ResourceMeta;
  listenerConfigSecretMetadata?: ResourceMeta;
  ephemeralRunnerSetMetadata?: ResourceMeta;
  ephemeralRunnerMetadata?: ResourceMeta;
  ephemeralRunnerConfigSecretMetadata?: ResourceMeta;
  maxRunners?: number;
  minRunners?: number;
}

export interface AutoscalingRunnerSetStatus {
  currentRunners?: number;
  phase?: AutoscalingRunnerSetPhase;
  pendingEphemeralRunners?: number;
  runningEphemeralRunners?: number;
  failedEphemeralRunners?: number;
  /** ARO: the scale set on the Actions service (ScaleSetReady) and the runner version (RunnerVersionCurrent). */
  conditions?: ScaleSetCondition[];
}

export interface AutoscalingRunnerSet extends KubernetesObject {
  spec: AutoscalingRunnerSetSpec;
  status?: AutoscalingRunnerSetStatus;
}

export type AutoscalingRunnerSetList = KubernetesListObject<AutoscalingRunnerSet>;
