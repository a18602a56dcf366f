import { createHash } from 'node:crypto';
import { Agent } from 'node:https';
import { rootCertificates } from 'node:tls';
import { HttpsProxyAgent } from 'https-proxy-agent';
import type { ClientCertificateCredential } from '@azure/identity';
import type { SecretClient } from '@azure/keyvault-secrets';
import { noProxyMatcher, type ProxySettings } from '@aro/actions';
import type { AzureKeyVaultConfig } from '@aro/api';
import type { AzureKeyVaultOptions } from './azure-key-vault-options';

type PipelinePolicy = NonNullable<
  NonNullable<ConstructorParameters<typeof SecretClient>[2]>['additionalPolicies']
>[number];

const PUBLIC_AUTHORITY = 'https://login.microsoftonline.com';
/** Distinct vault clients kept; each holds a token cache, so one per (vault, app, certificate, proxy). */
const MAX_CLIENTS = 32;

type AzureSdk = {
  ClientCertificateCredential: typeof ClientCertificateCredential;
  SecretClient: typeof SecretClient;
};

/**
 * The Azure SDK is about 250 modules and 20 MiB once loaded (with @azure/identity's MSAL and
 * OpenTelemetry); only a set whose credentials live in Key Vault needs it, so it is loaded on the first
 * vault read, not at start-up (the controller's start and idle memory: docs/performance.md).
 */
let azureSdk: Promise<AzureSdk> | undefined;
function loadAzureSdk(): Promise<AzureSdk> {
  azureSdk ??= Promise.all([import('@azure/identity'), import('@azure/keyvault-secrets')]).then(
    ([identity, secrets]) => ({
      ClientCertificateCredential: identity.ClientCertificateCredential,
      SecretClient: secrets.SecretClient,
    }),
  );
  return azureSdk;
}

/**
 * One SecretClient per vault, app registration, certificate and proxy, reused across resolutions so
 * the access token the credential got is reused until it expires instead of running the challenge
 * and the token request on every read. A changed certificate file is a different key: a rotated
 * certificate takes effect on the next read.
 */
export class AzureKeyVaultClients {
  private readonly clients = new Map<string, SecretClient>();

  constructor(private readonly options: AzureKeyVaultOptions) {}

  async clientFor(
    config: AzureKeyVaultConfig,
    certificatePem: string,
    proxy: ProxySettings | undefined,
  ): Promise<SecretClient> {
    // Awaited first, so that the lookup and the insertion below run without a pause between them.
    const { ClientCertificateCredential, SecretClient } = await loadAzureSdk();
    const authorityHost = this.options.authorityHost || process.env.AZURE_AUTHORITY_HOST || PUBLIC_AUTHORITY;
    const vaultProxy = proxyFor(config.url, proxy);
    const authorityProxy = proxyFor(authorityHost, proxy);
    const key = JSON.stringify([
      config.url,
      config.tenantId,
      config.clientId,
      createHash('sha256').update(certificatePem).digest('hex'),
      vaultProxy,
      authorityProxy,
    ]);
    const known = this.clients.get(key);
    if (known) return known;
    const retryOptions = { maxRetries: this.options.maxRetries ?? 2 };
    const credential = new ClientCertificateCredential(
      config.tenantId,
      config.clientId,
      { certificate: certificatePem },
      {
        authorityHost,
        disableInstanceDiscovery: this.options.disableInstanceDiscovery,
        // The vault's challenge names its tenant; a vault in another tenant than the app's is allowed.
        additionallyAllowedTenants: ['*'],
        additionalPolicies: this.agentPolicy(authorityProxy),
        retryOptions,
      },
    );
    const client = new SecretClient(config.url, credential, {
      disableChallengeResourceVerification: this.options.disableChallengeResourceVerification,
      additionalPolicies: this.agentPolicy(vaultProxy),
      retryOptions,
    });
    if (this.clients.size >= MAX_CLIENTS) this.clients.delete(this.clients.keys().next().value as string);
    this.clients.set(key, client);
    return client;
  }

  /**
   * The connection agent of one client, set on each request: through the proxy when there is one, with
   * the extra CAs beside the system roots. The SDK's own `proxyOptions` drops `tlsOptions` (it warns
   * and ignores the CAs), and a TLS-inspecting proxy is exactly where extra CAs are needed, so the
   * agent is made here with the library the SDK uses for it. Nothing to set when neither is asked.
   */
  private agentPolicy(proxyUrl: string | undefined): PipelinePolicy[] {
    const ca = this.options.caCertificates?.length
      ? [...rootCertificates, ...this.options.caCertificates]
      : undefined;
    if (proxyUrl === undefined && ca === undefined) return [];
    const agent =
      proxyUrl === undefined
        ? new Agent({ keepAlive: true, ca })
        : new HttpsProxyAgent(proxyUrl, { keepAlive: true });
    return [
      {
        position: 'perCall',
        policy: {
          name: 'aroConnectionAgent',
          sendRequest: (request, next) => {
            request.agent = agent;
            // The proxy agent takes the tunnelled connection's TLS options from the request, not
            // from its own options.
            if (proxyUrl !== undefined && ca !== undefined) {
              request.requestOverrides = { ...request.requestOverrides, ca };
            }
            return next(request);
          },
        },
      },
    ];
  }
}

/**
 * The proxy URL (with its credentials) for requests to `target`, as Go's httpproxy picks it
 * (upstream's vault client): the https proxy for an https URL, the http one for http, none when
 * noProxy matches the host. The SDK's no-proxy list comes only from the environment, so the choice
 * is made here.
 */
function proxyFor(target: string, proxy: ProxySettings | undefined): string | undefined {
  if (proxy === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return undefined;
  }
  if (proxy.noProxy?.length && noProxyMatcher(proxy.noProxy)(url)) return undefined;
  return url.protocol === 'https:' ? proxy.https : proxy.http;
}
