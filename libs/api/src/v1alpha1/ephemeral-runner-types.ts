import type {
  KubernetesListObject,
  KubernetesObject,
  V1ObjectMeta,
  V1PodSpec,
} from '@kubernetes/client-node';
import type { ProxyConfig, ResourceMeta, TLSConfig, VaultConfig } from './shared-types';

export const EphemeralRunnerPhase = {
  Pending: 'Pending',
  Running: 'Running',
  /** Only once the runner ran its job and is gone from the Actions service. */
  Succeeded: 'Succeeded',
  /** The runner cannot start (invalid pod, too many pod failures): needs a human. */
  Failed: 'Failed',
  /** The runner exited with the "version deprecated" code; the scale set must be upgraded. */
  Outdated: 'Outdated',
} as const;
export type EphemeralRunnerPhase = (typeof EphemeralRunnerPhase)[keyof typeof EphemeralRunnerPhase];

/**
 * Upstream embeds a corev1.PodTemplateSpec inline, so the pod template's `metadata` and `spec` sit
 * directly in `.spec` (the pod spec is `.spec.spec`).
 */
export interface EphemeralRunnerSpec {
  githubConfigUrl: string;
  githubConfigSecret: string;
  githubServerTLS?: TLSConfig;
  runnerScaleSetId: number;
  proxy?: ProxyConfig;
  /** Secret with `http_proxy` / `https_proxy` / `no_proxy`, created by the EphemeralRunnerSet controller. */
  proxySecretRef?: string;
  vaultConfig?: VaultConfig;
  /** Labels/annotations for the JIT config Secret. */
  ephemeralRunnerConfigSecretMetadata?: ResourceMeta;
  metadata?: V1ObjectMeta;
  spec?: V1PodSpec;
}

export interface EphemeralRunnerStatus {
  /** True only while the runner pod is Ready (the runner is online). */
  ready?: boolean;
  phase?: EphemeralRunnerPhase;
  reason?: string;
  message?: string;
  runnerId?: number;
  runnerName?: string;
  /** Failed pod UID -> RFC 3339 time of the failure; its size is the failure count. */
  failures?: Record<string, string>;
  jobRequestId?: number;
  jobId?: string;
  jobRepositoryName?: string;
  jobWorkflowRef?: string;
  workflowRunId?: number;
  jobDisplayName?: string;
}

export interface EphemeralRunner extends KubernetesObject {
  spec: EphemeralRunnerSpec;
  status?: EphemeralRunnerStatus;
}

export type EphemeralRunnerList = KubernetesListObject<EphemeralRunner>;
