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
  /**
   * ARO: warm headroom, idle runners kept above min_runners for the recent job arrival rate; absent
   * or max_runners 0 is none (upstream's count). From the AutoscalingRunnerSet's annotations
   * {@link WarmHeadroomAnnotations}; upstream's listener ignores the key.
   */
  warm_headroom?: ListenerWarmHeadroomConfig;
}

/** ARO addition to the listener config: the bounds of the warm headroom. */
export interface ListenerWarmHeadroomConfig {
  /** The most idle runners the headroom adds above min_runners (and never past max_runners). */
  max_runners: number;
  /** Seconds of job arrivals the rate is taken over; no arrival for this long is no headroom. */
  window_seconds: number;
}

/**
 * ARO, on an AutoscalingRunnerSet (set by the scale-set chart's `warmHeadroom` values), copied to its
 * AutoscalingListener and from there into config.json's `warm_headroom`. Upstream ignores them.
 */
export const WarmHeadroomAnnotations = {
  /** The most idle runners warm headroom adds above minRunners; absent or `0`: off. */
  maxRunners: 'actions.github.com/warm-headroom-max-runners',
  /** Seconds of job arrivals the rate is taken over; default {@link DEFAULT_WARM_HEADROOM_WINDOW_SECONDS}. */
  windowSeconds: 'actions.github.com/warm-headroom-window-seconds',
} as const;

export const DEFAULT_WARM_HEADROOM_WINDOW_SECONDS = 300;

/**
 * The warm headroom asked for by an object's annotations: undefined when off, or the problem with a
 * value that is not a whole number in range (the set then runs without headroom).
 */
export function warmHeadroomOf(annotations: Record<string, string> | undefined): {
  config?: ListenerWarmHeadroomConfig;
  problem?: string;
} {
  const raw = annotations?.[WarmHeadroomAnnotations.maxRunners];
  if (raw === undefined || raw.trim() === '') return {};
  const whole = (value: string, min: number): number | undefined =>
    /^\d+$/.test(value.trim()) && Number(value) >= min && Number(value) <= 2 ** 31 - 1
      ? Number(value)
      : undefined;
  const maxRunners = whole(raw, 0);
  if (maxRunners === undefined) {
    return { problem: `${WarmHeadroomAnnotations.maxRunners} ${JSON.stringify(raw)} is not a whole number` };
  }
  if (maxRunners === 0) return {};
  const rawWindow = annotations?.[WarmHeadroomAnnotations.windowSeconds];
  const window = rawWindow === undefined ? DEFAULT_WARM_HEADROOM_WINDOW_SECONDS : whole(rawWindow, 1);
  if (window === undefined) {
    return {
      problem: `${WarmHeadroomAnnotations.windowSeconds} ${JSON.stringify(rawWindow)} is not a whole number of seconds above 0`,
    };
  }
  return { config: { max_runners: maxRunners, window_seconds: window } };
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
