import { createHash } from 'node:crypto';
import {
  ActionsServiceClient,
  type GitHubCredentials,
  type MultiClient,
  type ProxySettings,
  isActionsError,
  parseGitHubConfigUrl,
} from '@aro/actions';
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
  /**
   * How long a credential the service refused (401, 403, or 404 for the config URL) is refused here
   * without asking again. A changed credential is a different one and is tried at once.
   */
  credentialFailureTtlMs?: number;
  now?: () => number;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_CREDENTIAL_FAILURE_TTL_MS = 60_000;

/** The GitHub endpoints that answer for the credential and the config URL, not for one runner. */
const CREDENTIAL_ENDPOINTS = [
  /\/runners\/registration-token$/,
  /\/actions\/runner-registration$/,
  /\/access_tokens$/,
];

/**
 * Whether `err` (or an error it wraps) says the credential or the config URL is wrong: 401 or 403
 * from any call, or 404 from the endpoints that exchange the credential for a token, which is how
 * GitHub answers a config URL naming an organization or repository the credential cannot see. A
 * retry cannot fix these until someone changes the Secret or the spec.
 */
export function isCredentialFailure(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (e instanceof RememberedCredentialFailure) return true;
    if (!isActionsError(e)) continue;
    if (e.statusCode === 401 || e.statusCode === 403) return true;
    if (e.statusCode === 404) {
      const path = (() => {
        try {
          return new URL(e.url).pathname;
        } catch {
          return e.url;
        }
      })();
      if (CREDENTIAL_ENDPOINTS.some((re) => re.test(path))) return true;
    }
  }
  return false;
}

/** A credential refused moments ago, refused again without a call to the service. */
export class RememberedCredentialFailure extends Error {
  constructor(message: string, cause: unknown) {
    super(message, { cause });
    this.name = 'RememberedCredentialFailure';
  }
}

interface CredentialFailure {
  error: unknown;
  until: number;
}

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
  private readonly failureTtlMs: number;
  private readonly now: () => number;
  /** Keyed by config URL, namespace and a hash of the credential: never the credential itself. */
  private readonly failedCredentials = new Map<string, CredentialFailure>();
  /**
   * One remembering wrapper per client, so that the same inputs still give the same object: the
   * MultiClient's client already stands for one credential, config URL and namespace.
   */
  private readonly wrapped = new WeakMap<ActionsServiceClient, ActionsServiceClient>();

  constructor(opts: SecretResolverOptions) {
    this.kube = opts.kube;
    this.multiClient = opts.multiClient;
    this.sources = opts.sources ?? [new KubernetesSecretSource(opts.kube)];
    this.log = opts.logger ?? silentLogger;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.failureTtlMs = opts.credentialFailureTtlMs ?? DEFAULT_CREDENTIAL_FAILURE_TTL_MS;
    this.now = opts.now ?? Date.now;
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

  /**
   * Credentials, proxy and CAs resolved together, handed to the MultiClient's cache.
   *
   * A credential the service refused is remembered for `credentialFailureTtlMs`: many runners share
   * one Secret, and without this each of them would ask the service again on each of its retries (a
   * wrong PAT cost a dozen token exchanges in seconds for a single runner). The Secret is still read
   * on every call, so a fixed credential, being a different one, is used at once. An invalid config
   * URL fails before anything is read.
   */
  async getActionsClient(holder: GitHubConfigHolder, signal?: AbortSignal): Promise<ActionsServiceClient> {
    parseGitHubConfigUrl(holder.githubConfigUrl);
    const [credentials, proxy, rootCAs] = await Promise.all([
      this.getCredentials(holder, signal),
      this.getProxySettings(holder, signal),
      this.getRootCAs(holder, signal),
    ]);
    const key = this.credentialKey(holder, credentials);
    const failed = this.failedCredentials.get(key);
    const now = this.now();
    if (failed && failed.until > now) {
      // The same words for the whole time it is remembered, so that the Events of the retries it
      // answers fold into one.
      const cause = failed.error instanceof Error ? failed.error.message : String(failed.error);
      throw new RememberedCredentialFailure(
        `the GitHub credentials in ${holder.namespace}/${holder.githubConfigSecret} were refused for ` +
          `${holder.githubConfigUrl} (${cause}); not asking the service again before ` +
          `${new Date(failed.until).toISOString()} unless the Secret changes`,
        failed.error,
      );
    }
    if (failed) this.failedCredentials.delete(key);
    const client = this.multiClient.getClientFor({
      configUrl: holder.githubConfigUrl,
      namespace: holder.namespace,
      credentials,
      proxy,
      rootCAs,
    });
    return this.remembering(client, key);
  }

  private credentialKey(holder: GitHubConfigHolder, credentials: GitHubCredentials): string {
    const fingerprint = createHash('sha256').update(JSON.stringify(credentials)).digest('hex');
    return `${holder.githubConfigUrl}\n${holder.namespace}\n${fingerprint}`;
  }

  /** The client, with every call that fails for the credential remembered under `key`. */
  private remembering(client: ActionsServiceClient, key: string): ActionsServiceClient {
    const existing = this.wrapped.get(client);
    if (existing) return existing;
    const remember = (err: unknown) => {
      if (isCredentialFailure(err) && !(err instanceof RememberedCredentialFailure)) {
        const at = this.now();
        this.failedCredentials.set(key, { error: err, until: at + this.failureTtlMs });
        // Bounded: entries are dropped once expired, checked as new ones come.
        for (const [k, v] of this.failedCredentials) if (v.until <= at) this.failedCredentials.delete(k);
      }
      throw err;
    };
    const wrapper = new Proxy(client, {
      get(target, prop, receiver) {
        const value: unknown = Reflect.get(target, prop, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          const result: unknown = (value as (...a: unknown[]) => unknown).apply(target, args);
          return result instanceof Promise ? result.catch(remember) : result;
        };
      },
    });
    this.wrapped.set(client, wrapper);
    return wrapper;
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
