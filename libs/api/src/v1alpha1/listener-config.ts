import type { MetricsConfig } from './shared-types';

/**
 * The listener's configuration: what the AutoscalingListener controller writes as JSON under the key
 * `config.json` of the Secret `<listener>-config`, and what the listener process (apps/listener) reads
 * from the file named by `LISTENER_CONFIG_PATH`. The JSON names are upstream's (`cmd/ghalistener/config`
 * with the embedded `appconfig.AppConfig`), so a config secret written by either controller reads the
 * same; ARO's additions are optional and marked.
 *
 * This type is the contract between the two halves of scale-set mode, which are built and released
 * together but run in different pods: change it only in a way both sides read.
 */
export interface ListenerConfig {
  /** The GitHub config URL of the scale set (enterprise, organization or repository). */
  configure_url: string;
  /** Personal access token; exactly one of this or the three App fields is set (or a vault lookup). */
  github_token?: string;
  /** App ID or client ID, as a string. */
  github_app_id?: string;
  github_app_installation_id?: number;
  github_app_private_key?: string;
  /** `azure_key_vault` when the credentials are looked up in a vault instead; empty otherwise. */
  vault_type?: string;
  /** The key to look up in the vault (upstream: the githubConfigSecret value). */
  vault_lookup_key?: string;
  ephemeral_runner_set_namespace: string;
  ephemeral_runner_set_name: string;
  max_runners: number;
  min_runners: number;
  runner_scale_set_id: number;
  runner_scale_set_name: string;
  /** PEM of extra root CAs for the GitHub server (githubServerTLS), or empty. */
  server_root_ca?: string;
  log_level?: string;
  log_format?: string;
  /** Where the listener serves /metrics (and ARO's /healthz and /readyz), e.g. `:8080`; empty or `0` disables. */
  metrics_addr?: string;
  metrics_endpoint?: string;
  metrics?: MetricsConfig;
  /**
   * ARO: the proxy for Actions service calls, with credentials already resolved from the proxy
   * secret (upstream passes them through the `<listener>-proxy` secret as environment variables).
   */
  proxy?: ListenerProxyConfig;
}

/** ARO addition to the listener config: proxy URLs with userinfo, and the hosts that bypass them. */
export interface ListenerProxyConfig {
  http?: string;
  https?: string;
  no_proxy?: string[];
}

export const ListenerDefaults = {
  /** Key of the config Secret that holds the JSON above. */
  configSecretKey: 'config.json',
  /** Where the config Secret is mounted in the listener pod (upstream's path). */
  configPath: '/etc/gha-listener/config.json',
  /** The listener's entrypoint in the ARO image (upstream: `/ghalistener`). */
  command: ['aro-listener'] as readonly string[],
  metricsAddr: ':8080',
  metricsEndpoint: '/metrics',
  /** Seconds the listener pod gets to delete its message session on SIGTERM. */
  terminationGracePeriodSeconds: 60,
} as const;

/** Name of the listener's config Secret (in the listener's namespace). */
export function listenerConfigSecretName(listenerName: string): string {
  return `${listenerName}-config`;
}
