import type {
  KubernetesListObject,
  KubernetesObject,
  V1LocalObjectReference,
  V1PodTemplateSpec,
} from '@kubernetes/client-node';
import type { MetricsConfig, ProxyConfig, ResourceMeta, TLSConfig, VaultConfig } from './shared-types';

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

/** Upstream's listener status is an empty struct; kept so the status subresource has a type. */
export type AutoscalingListenerStatus = Record<string, never>;

export interface AutoscalingListener extends KubernetesObject {
  spec: AutoscalingListenerSpec;
  status?: AutoscalingListenerStatus;
}

export type AutoscalingListenerList = KubernetesListObject<AutoscalingListener>;
