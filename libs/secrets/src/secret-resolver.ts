import type { ActionsServiceClient, GitHubCredentials, MultiClient, ProxySettings } from '@aro/actions';
import type { KubeClient } from '@aro/kube';
import { Logger, silentLogger } from '@aro/observability';
import { withDeadline } from './abortable';
import type { GitHubConfigHolder } from './config-holder';
import { CredentialSource, vaultTypeOf } from './credential-source';
import { SecretResolutionError } from './errors';
import { readConfigMapData } from './kube-objects';
import { describeHolder, KubernetesSecretSource } from './kubernetes-secret-source';
import { ProxyCredentials, resolveProxySettings } from './proxy';
import { parseCertificateBundle } from './root-cas';

export interface SecretResolverOptions {
  kube: KubeClient;
  multiClient: MultiClient;
  /**
   * Consulted in order, first `handles` wins. Defaults to the Kubernetes Secret source alone; a list
   * given here is used as is, so include a {@link KubernetesSecretSource} to keep serving plain holders.
   */
  sources?: readonly CredentialSource[];
  logger?: Logger;
  /** Upper bound on one resolution (all its API reads together). */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 30_000;

/**
 * Turns what an AutoscalingRunnerSet, EphemeralRunnerSet, EphemeralRunner or AutoscalingListener
 * says about GitHub (config URL, credential Secret, proxy, CA, vault) into an Actions service
 * client. Nothing is cached here: Secrets and ConfigMaps are read on every call so a rotated
 * credential takes effect on the next reconcile, and the MultiClient keeps one client per distinct
 * set of inputs so the reads do not cost a new client (or a new App token) each time.
 */
export class SecretResolver {
  private readonly kube: KubeClient;
  private readonly multiClient: MultiClient;
  private readonly sources: readonly CredentialSource[];
  private readonly log: Logger;
  private readonly timeoutMs: number;

  constructor(opts: SecretResolverOptions) {
    this.kube = opts.kube;
    this.multiClient = opts.multiClient;
    this.sources = opts.sources ?? [new KubernetesSecretSource(opts.kube)];
    this.log = opts.logger ?? silentLogger;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  async getCredentials(holder: GitHubConfigHolder, signal?: AbortSignal): Promise<GitHubCredentials> {
    const source = this.sourceFor(holder);
    const credentials = await source.getCredentials(holder, withDeadline(signal, this.timeoutMs));
    this.log.debug('Resolved GitHub credentials', {
      namespace: holder.namespace,
      holder: holder.name,
      secret: holder.githubConfigSecret,
      source: source.name,
      credentialKind: credentials.kind,
    });
    return credentials;
  }

  async getProxySettings(
    holder: GitHubConfigHolder,
    signal?: AbortSignal,
  ): Promise<ProxySettings | undefined> {
    if (holder.proxy === undefined) return undefined;
    const deadline = withDeadline(signal, this.timeoutMs);
    return resolveProxySettings(
      holder.proxy,
      { namespace: holder.namespace, holder: describeHolder(holder) },
      (secretName) => this.proxyCredentials(holder, secretName, deadline),
    );
  }

  /**
   * The extra root CAs from `githubServerTLS.certificateFrom.configMapKeyRef`, one PEM string per
   * certificate, read from the holder's namespace. They are added to the system roots by the client,
   * not used instead of them, as upstream does.
   */
  async getRootCAs(holder: GitHubConfigHolder, signal?: AbortSignal): Promise<string[] | undefined> {
    const tls = holder.githubServerTLS;
    if (tls === undefined) return undefined;
    const ref = tls.certificateFrom?.configMapKeyRef;
    if (ref?.name === undefined || ref.name === '' || ref.key === '') {
      throw new SecretResolutionError({
        reason: 'InvalidTLSConfig',
        namespace: holder.namespace,
        detail: `${describeHolder(holder)} sets githubServerTLS without certificateFrom.configMapKeyRef name and key`,
      });
    }
    const data = await readConfigMapData(
      this.kube,
      holder.namespace,
      ref.name,
      withDeadline(signal, this.timeoutMs),
    );
    const where = { namespace: holder.namespace, secretName: ref.name, objectKind: 'ConfigMap' as const };
    if (data === undefined) {
      throw new SecretResolutionError({
        ...where,
        reason: 'ConfigMapNotFound',
        detail: `CA ConfigMap not found (referenced by ${describeHolder(holder)} githubServerTLS)`,
      });
    }
    const pem = data[ref.key];
    if (pem === undefined || pem.trim() === '') {
      throw new SecretResolutionError({
        ...where,
        key: ref.key,
        reason: 'KeyMissing',
        detail: 'missing or empty',
      });
    }
    const bundle = parseCertificateBundle(pem);
    if (!bundle.ok) {
      throw new SecretResolutionError({
        ...where,
        key: ref.key,
        reason: 'InvalidCertificate',
        detail: bundle.problem,
      });
    }
    return bundle.certificates;
  }

  /** Credentials, proxy and CAs resolved together, handed to the MultiClient's cache. */
  async getActionsClient(holder: GitHubConfigHolder, signal?: AbortSignal): Promise<ActionsServiceClient> {
    const [credentials, proxy, rootCAs] = await Promise.all([
      this.getCredentials(holder, signal),
      this.getProxySettings(holder, signal),
      this.getRootCAs(holder, signal),
    ]);
    return this.multiClient.getClientFor({
      configUrl: holder.githubConfigUrl,
      namespace: holder.namespace,
      credentials,
      proxy,
      rootCAs,
    });
  }

  private sourceFor(holder: GitHubConfigHolder): CredentialSource {
    if (holder.namespace === '') {
      throw new SecretResolutionError({
        reason: 'InvalidHolder',
        namespace: '(none)',
        detail: `${describeHolder(holder)} has no namespace to read its GitHub config Secret from`,
      });
    }
    const source = this.sources.find((s) => s.handles(holder));
    if (source !== undefined) return source;
    const vaultType = vaultTypeOf(holder);
    throw new SecretResolutionError({
      reason: 'NoCredentialSource',
      namespace: holder.namespace,
      secretName: holder.githubConfigSecret,
      objectKind: vaultType === '' ? 'Secret' : 'vault secret',
      detail:
        vaultType === ''
          ? `no credential source handles ${describeHolder(holder)} (no vault type set)`
          : `no credential source handles vault type ${vaultType} (${describeHolder(holder)}); ` +
            `registered sources: ${this.sources.map((s) => s.name).join(', ') || 'none'}`,
    });
  }

  private async proxyCredentials(
    holder: GitHubConfigHolder,
    secretName: string,
    signal: AbortSignal,
  ): Promise<ProxyCredentials> {
    const source = this.sourceFor(holder);
    if (source.getProxyCredentials !== undefined) {
      return source.getProxyCredentials(holder, secretName, signal);
    }
    return new KubernetesSecretSource(this.kube).getProxyCredentials(holder, secretName, signal);
  }
}
