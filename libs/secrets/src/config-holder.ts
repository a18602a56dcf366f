import type {
  AutoscalingListener,
  AutoscalingRunnerSet,
  EphemeralRunner,
  EphemeralRunnerSet,
  ProxyConfig,
  TLSConfig,
  VaultConfig,
} from '@aro/api';

/**
 * What the resolver needs from an AutoscalingRunnerSet, EphemeralRunnerSet, EphemeralRunner or
 * AutoscalingListener (upstream's `ActionsGitHubObject`). Secrets and the CA ConfigMap are read from
 * `namespace`.
 */
export interface GitHubConfigHolder {
  namespace: string;
  githubConfigUrl: string;
  githubConfigSecret: string;
  proxy?: ProxyConfig;
  githubServerTLS?: TLSConfig;
  vaultConfig?: VaultConfig;
  /** Names the object in messages, e.g. `EphemeralRunner runner-abc12`. */
  name?: string;
}

interface GitHubSettings {
  githubConfigUrl?: string;
  githubConfigSecret?: string;
  proxy?: ProxyConfig;
  githubServerTLS?: TLSConfig;
  vaultConfig?: VaultConfig;
}

function holder(
  kind: string,
  namespace: string,
  name: string | undefined,
  spec: GitHubSettings,
): GitHubConfigHolder {
  return {
    namespace,
    githubConfigUrl: spec.githubConfigUrl ?? '',
    githubConfigSecret: spec.githubConfigSecret ?? '',
    proxy: spec.proxy,
    githubServerTLS: spec.githubServerTLS,
    vaultConfig: spec.vaultConfig,
    name: `${kind} ${name ?? '(unnamed)'}`,
  };
}

export function configHolderOf(er: EphemeralRunner): GitHubConfigHolder {
  return holder('EphemeralRunner', er.metadata?.namespace ?? '', er.metadata?.name, er.spec);
}

export function configHolderOfRunnerSet(ers: EphemeralRunnerSet): GitHubConfigHolder {
  return holder(
    'EphemeralRunnerSet',
    ers.metadata?.namespace ?? '',
    ers.metadata?.name,
    ers.spec.ephemeralRunnerSpec,
  );
}

export function configHolderOfScaleSet(ars: AutoscalingRunnerSet): GitHubConfigHolder {
  return holder('AutoscalingRunnerSet', ars.metadata?.namespace ?? '', ars.metadata?.name, ars.spec);
}

/**
 * A listener lives in the controller's namespace, but its credentials, proxy Secrets and CA
 * ConfigMap are its scale set's, so they are read from the AutoscalingRunnerSet's namespace, as
 * upstream does.
 */
export function configHolderOfListener(listener: AutoscalingListener): GitHubConfigHolder {
  const namespace = listener.spec.autoscalingRunnerSetNamespace || listener.metadata?.namespace || '';
  return holder('AutoscalingListener', namespace, listener.metadata?.name, listener.spec);
}
