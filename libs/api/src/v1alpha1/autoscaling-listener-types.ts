import type {
  KubernetesListObject,
  KubernetesObject,
  V1LocalObjectReference,
  V1PodTemplateSpec,
} from '@kubernetes/client-node';
import type { MetricsConfig, ProxyConfig, ResourceMeta, TLSConfig, VaultConfig } from './shared-types';
import type { ScaleSetCondition } from './scale-set';

export interface AutoscalingListenerSpec {
  githubConfigUrl?: string;
  githubConfigSecret?: string;
  runnerScaleSetId?: number;
  autoscalingRunnerSetNamespace?: string;
  autoscalingRunnerSetName?: string;
  ephemeralRunnerSetName?: string;
  maxRunners?: number;
  minRunners?: number;
  image?: string;
  imagePullSecrets?: V1LocalObjectReference[];
  proxy?: ProxyConfig;
  githubServerTLS?: TLSConfig;
  vaultConfig?: VaultConfig;
  metrics?: MetricsConfig;
  template?: V1PodTemplateSpec;
  configSecretMetadata?: ResourceMeta;
  serviceAccountMetadata?: ResourceMeta;
  roleMetadata?: ResourceMeta;
  roleBindingMetadata?: ResourceMeta;
}

/**
 * Upstream's listener status is an empty struct. ARO records why the listener pod was last recreated
 * and how often in a row, so a crash-looping listener is visible on the object (all fields optional,
 * so an upstream-written listener reads the same).
 */
export interface AutoscalingListenerStatus {
  /** Consecutive recreations of the listener pod without it reaching Running in between. */
  restarts?: number;
  /** Why the pod was last recreated (ListenerPodEnded, ListenerPodEvicted, ...). */
  reason?: string;
  message?: string;
  /** When the pod was last found ended; the backoff counts from here. */
  lastRestartTime?: string;
  conditions?: ScaleSetCondition[];
}

export interface AutoscalingListener extends KubernetesObject {
  spec: AutoscalingListenerSpec;
  status?: AutoscalingListenerStatus;
}

export type AutoscalingListenerList = KubernetesListObject<AutoscalingListener>;
