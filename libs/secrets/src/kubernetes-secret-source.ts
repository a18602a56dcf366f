import type { GitHubCredentials } from '@aro/actions';
import type { KubeClient } from '@aro/kube';
import { credentialsFromSecretData } from './app-credentials';
import type { GitHubConfigHolder } from './config-holder';
import { CredentialSource, vaultTypeOf } from './credential-source';
import { SecretResolutionError } from './errors';
import { readSecretData } from './kube-objects';
import { ProxyCredentials, proxyCredentialsFromSecretData } from './proxy';

/**
 * The default source: a Secret named `githubConfigSecret` in the holder's namespace, with the keys
 * upstream ARC's Helm chart writes. It serves every holder without a vault type.
 */
export class KubernetesSecretSource implements CredentialSource {
  readonly name = 'kubernetes-secret';

  constructor(private readonly kube: KubeClient) {}

  handles(holder: GitHubConfigHolder): boolean {
    return vaultTypeOf(holder) === '';
  }

  async getCredentials(holder: GitHubConfigHolder, signal?: AbortSignal): Promise<GitHubCredentials> {
    const where = { namespace: holder.namespace, name: holder.githubConfigSecret };
    const data = await this.read(where, 'GitHub config Secret', holder, signal);
    return credentialsFromSecretData(data, where);
  }

  async getProxyCredentials(
    holder: GitHubConfigHolder,
    secretName: string,
    signal?: AbortSignal,
  ): Promise<ProxyCredentials> {
    const where = { namespace: holder.namespace, name: secretName };
    const data = await this.read(where, 'proxy credential Secret', holder, signal);
    return proxyCredentialsFromSecretData(data, where);
  }

  private async read(
    where: { namespace: string; name: string },
    role: string,
    holder: GitHubConfigHolder,
    signal: AbortSignal | undefined,
  ): Promise<Record<string, string>> {
    if (where.name === '') {
      throw new SecretResolutionError({
        reason: 'SecretNotFound',
        namespace: where.namespace,
        detail: `${describeHolder(holder)} names no ${role}`,
      });
    }
    const data = await readSecretData(this.kube, where.namespace, where.name, signal);
    if (data === undefined) {
      throw new SecretResolutionError({
        reason: 'SecretNotFound',
        namespace: where.namespace,
        secretName: where.name,
        detail: `${role} not found (referenced by ${describeHolder(holder)})`,
      });
    }
    return data;
  }
}

export function describeHolder(holder: GitHubConfigHolder): string {
  return holder.name === undefined ? 'the object' : holder.name;
}
