import type { V1ConfigMapKeySelector } from '@kubernetes/client-node';

/** Labels and annotations that ARC copies onto a resource it creates (`common.go` ResourceMeta). */
export interface ResourceMeta {
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** Where the PEM of an extra root CA for the GitHub server comes from. */
export interface TLSCertificateSource {
  configMapKeyRef: V1ConfigMapKeySelector;
}

/** Extra trust for a GitHub Enterprise Server with a private CA (`githubServerTLS`). */
export interface TLSConfig {
  certificateFrom: TLSCertificateSource;
}

export interface ProxyServerConfig {
  url: string;
  /** Name of a Secret with `username` / `password` keys, injected as the proxy URL's userinfo. */
  credentialSecretRef?: string;
}

export interface ProxyConfig {
  http?: ProxyServerConfig;
  https?: ProxyServerConfig;
  noProxy?: string[];
}

/** The only vault type upstream knows; any other value is refused by the secret resolver. */
export const VAULT_TYPE_AZURE_KEY_VAULT = 'azure_key_vault';

export interface AzureKeyVaultConfig {
  url: string;
  tenantId: string;
  clientId: string;
  certificatePath: string;
}

export interface VaultConfig {
  /** `azure_key_vault`, or empty for "credentials live in a Kubernetes Secret". */
  type?: string;
  azureKeyVault?: AzureKeyVaultConfig;
  proxy?: ProxyConfig;
}

export interface CounterMetric {
  labels: string[];
}

export interface GaugeMetric {
  labels: string[];
}

export interface HistogramMetric {
  labels: string[];
  buckets?: number[];
}

/** Which listener metrics to publish, keyed by metric name. */
export interface MetricsConfig {
  counters?: Record<string, CounterMetric>;
  gauges?: Record<string, GaugeMetric>;
  histograms?: Record<string, HistogramMetric>;
}
