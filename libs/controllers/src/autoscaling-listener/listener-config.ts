import { AutoscalingListener, ListenerConfig, warmHeadroomOf } from '@aro/api';
import { SecretResolver, configHolderOfListener } from '@aro/secrets';

export interface ListenerConfigSettings {
  scaleSetName: string;
  logLevel?: string;
  logFormat?: string;
  metricsAddr: string;
  metricsEndpoint: string;
}

/**
 * The listener's config.json (the contract in `@aro/api` ListenerConfig): the scale set and its
 * EphemeralRunnerSet, the bounds, and everything it needs to reach the service resolved here, where
 * the Secrets can be read: the credentials (from the set's vault too: upstream's listener reads the
 * vault itself, which would need the vault's certificate in every listener pod), the CA PEM and the
 * proxy with its credentials. The listener's ServiceAccount can then be denied every read.
 */
export async function buildListenerConfig(
  resolver: SecretResolver,
  listener: AutoscalingListener,
  settings: ListenerConfigSettings,
  signal: AbortSignal,
): Promise<ListenerConfig> {
  const holder = configHolderOfListener(listener);
  const spec = listener.spec;
  const config: ListenerConfig = {
    configure_url: spec.githubConfigUrl ?? '',
    ephemeral_runner_set_namespace: spec.autoscalingRunnerSetNamespace ?? '',
    ephemeral_runner_set_name: spec.ephemeralRunnerSetName ?? '',
    max_runners: spec.maxRunners ?? 0,
    min_runners: spec.minRunners ?? 0,
    runner_scale_set_id: spec.runnerScaleSetId ?? 0,
    runner_scale_set_name: settings.scaleSetName,
    log_level: settings.logLevel,
    log_format: settings.logFormat,
    metrics_addr: settings.metricsAddr,
    metrics_endpoint: settings.metricsEndpoint,
  };
  if (spec.metrics) config.metrics = spec.metrics;
  // A bad value was reported when the listener was reconciled (ListenerConfigWriter); it means none.
  const headroom = warmHeadroomOf(listener.metadata?.annotations).config;
  if (headroom) config.warm_headroom = headroom;
  const credentials = await resolver.getCredentials(holder, signal);
  if (credentials.kind === 'pat') {
    config.github_token = credentials.token;
  } else {
    config.github_app_id = credentials.appId;
    config.github_app_installation_id = credentials.installationId;
    config.github_app_private_key = credentials.privateKey;
  }
  const rootCAs = await resolver.getRootCAs(holder, signal);
  if (rootCAs?.length) config.server_root_ca = rootCAs.join('\n');
  const proxy = await resolver.getProxySettings(holder, signal);
  if (proxy) {
    config.proxy = {
      ...(proxy.http ? { http: proxy.http } : {}),
      ...(proxy.https ? { https: proxy.https } : {}),
      ...(proxy.noProxy?.length ? { no_proxy: proxy.noProxy } : {}),
    };
  }
  return config;
}
