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
  /** ARO: what the leader's orphan registration sweep last saw for this scale set (the leak audit). */
  orphanSweep?: OrphanSweepAudit;
}

/**
 * ARO: the leak audit. Written by the orphan registration sweep, at most once per pass and only when a
 * count changed or the recorded pass is an hour old, so an idle scale set costs one write an hour.
 */
export interface OrphanSweepAudit {
  /** The pass this audit comes from (refreshed at least hourly while nothing changes). */
  lastPassTime?: string;
  /** Runner registrations the Actions service lists for the scale set. */
  registrations?: number;
  /** EphemeralRunners in the cluster on the scale set that hold a registration. */
  runners?: number;
  /** Registrations the pass saw without an EphemeralRunner (in their grace, or queued for removal). */
  orphans?: number;
  /** Orphaned registrations queued for removal, all passes together. */
  orphansRemoved?: number;
}

export interface AutoscalingRunnerSet extends KubernetesObject {
  spec: AutoscalingRunnerSetSpec;
  status?: AutoscalingRunnerSetStatus;
}

export type AutoscalingRunnerSetList = KubernetesListObject<AutoscalingRunnerSet>;
