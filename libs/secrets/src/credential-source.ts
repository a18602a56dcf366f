import type { GitHubCredentials } from '@aro/actions';
import type { GitHubConfigHolder } from './config-holder';
import type { ProxyCredentials } from './proxy';

/**
 * Injection token for the ordered list of credential sources the resolver consults. The first source
 * whose `handles` says yes serves the holder; {@link SecretsModule.forRoot} puts platform-supplied
 * sources first and the Kubernetes Secret source last.
 */
export const CREDENTIAL_SOURCES = Symbol('aro.credentialSources');

/**
 * Where a holder's GitHub credentials come from: a Kubernetes Secret by default, or a vault a
 * platform team plugs in. A source is asked only about holders it claims, so a vault source normally
 * claims the holders whose `vaultConfig.type` it implements.
 */
export interface CredentialSource {
  /** For logs and errors, e.g. `kubernetes-secret`. */
  readonly name: string;
  handles(holder: GitHubConfigHolder): boolean;
  /**
   * The credentials named by `holder.githubConfigSecret`. Throw {@link SecretResolutionError} for
   * anything a person must fix; other errors are treated as transient by callers.
   */
  getCredentials(holder: GitHubConfigHolder, signal?: AbortSignal): Promise<GitHubCredentials>;
  /**
   * Username and password for a proxy `credentialSecretRef`. Optional: a source that leaves it out
   * gets proxy credentials from the Kubernetes Secret of that name in the holder's namespace.
   */
  getProxyCredentials?(
    holder: GitHubConfigHolder,
    secretName: string,
    signal?: AbortSignal,
  ): Promise<ProxyCredentials>;
}

/** The holder's vault type, `''` when it has none (credentials then live in a Kubernetes Secret). */
export function vaultTypeOf(holder: GitHubConfigHolder): string {
  return holder.vaultConfig?.type ?? '';
}
