import { readFile } from 'node:fs/promises';
import type { GitHubCredentials } from '@aro/actions';
import { VAULT_TYPE_AZURE_KEY_VAULT, type AzureKeyVaultConfig } from '@aro/api';
import type { KubeClient } from '@aro/kube';
import { credentialsFromJson } from '../app-credentials';
import type { GitHubConfigHolder } from '../config-holder';
import { CredentialSource, vaultTypeOf } from '../credential-source';
import { SecretResolutionError, SecretResolutionReason, VaultUnavailableError } from '../errors';
import { describeHolder, KubernetesSecretSource } from '../kubernetes-secret-source';
import { ProxyCredentials, proxyCredentialsFromSecretData, resolveProxySettings } from '../proxy';
import { azureOutage, codeOf, entraRefusal, statusOf } from './azure-failures';
import { AzureKeyVaultClients } from './azure-key-vault-clients';
import type { AzureKeyVaultOptions } from './azure-key-vault-options';

const CONFIG_FIELDS = ['url', 'tenantId', 'clientId', 'certificatePath'] as const;

/**
 * Upstream's `azure_key_vault` vault: the holder's `githubConfigSecret` names a Key Vault secret whose
 * value is the GitHub config as JSON (`github_token`, or the `github_app_*` keys), read with the app
 * registration's certificate (`vaultConfig.azureKeyVault`), through `vaultConfig.proxy` when set. A
 * proxy `credentialSecretRef` of the GitHub proxy names a vault secret too (`username`/`password`
 * JSON), as upstream reads it; the vault's own proxy credentials come from a Kubernetes Secret.
 *
 * Anything a person must fix (a missing field or certificate, a secret the vault does not have, an app
 * the vault or Entra ID refuses) is a {@link SecretResolutionError} naming the key and the vault;
 * throttling, 5xx and network failures stay ordinary errors, retried by the caller.
 */
export class AzureKeyVaultSource implements CredentialSource {
  readonly name = 'azure-key-vault';
  private readonly clients: AzureKeyVaultClients;
  private readonly kubeSecrets: KubernetesSecretSource;

  constructor(kube: KubeClient, options: AzureKeyVaultOptions = {}) {
    this.clients = new AzureKeyVaultClients(options);
    this.kubeSecrets = new KubernetesSecretSource(kube);
  }

  handles(holder: GitHubConfigHolder): boolean {
    return vaultTypeOf(holder) === VAULT_TYPE_AZURE_KEY_VAULT;
  }

  async getCredentials(holder: GitHubConfigHolder, signal?: AbortSignal): Promise<GitHubCredentials> {
    const json = await this.read(holder, holder.githubConfigSecret, 'GitHub config', signal);
    return credentialsFromJson(json, {
      namespace: holder.namespace,
      name: holder.githubConfigSecret,
      objectKind: 'vault secret',
    });
  }

  async getProxyCredentials(
    holder: GitHubConfigHolder,
    secretName: string,
    signal?: AbortSignal,
  ): Promise<ProxyCredentials> {
    const where = { namespace: holder.namespace, name: secretName, objectKind: 'vault secret' as const };
    const json = await this.read(holder, secretName, 'proxy credential', signal);
    let data: unknown;
    try {
      data = JSON.parse(json);
    } catch {
      data = undefined;
    }
    if (typeof data !== 'object' || data === null || Array.isArray(data)) {
      throw new SecretResolutionError({
        ...where,
        reason: 'InvalidJson',
        detail: 'is not a JSON object with username and password',
      });
    }
    const record = data as Record<string, unknown>;
    const text = (v: unknown) => (typeof v === 'string' ? v : undefined);
    return proxyCredentialsFromSecretData(
      { username: text(record.username), password: text(record.password) },
      where,
    );
  }

  private async read(
    holder: GitHubConfigHolder,
    secretName: string,
    role: string,
    signal: AbortSignal | undefined,
  ): Promise<string> {
    const config = this.configOf(holder);
    const fail = (reason: SecretResolutionReason, detail: string, cause?: unknown) =>
      new SecretResolutionError({
        reason,
        namespace: holder.namespace,
        secretName,
        objectKind: 'vault secret',
        detail: `${detail} (${role} of ${describeHolder(holder)}, Azure Key Vault ${config.url})`,
        cause,
      });
    if (secretName === '') {
      throw new SecretResolutionError({
        reason: 'InvalidVaultConfig',
        namespace: holder.namespace,
        detail: `${describeHolder(holder)} names no ${role} secret (githubConfigSecret is the Key Vault secret name)`,
      });
    }
    const certificate = await this.certificate(holder, config);
    const proxy = await resolveProxySettings(
      holder.vaultConfig?.proxy,
      { namespace: holder.namespace, holder: `${describeHolder(holder)} vaultConfig` },
      (name) => this.kubeSecrets.getProxyCredentials(holder, name, signal),
    );
    const client = await this.clients.clientFor(config, certificate, proxy);
    try {
      const secret = await client.getSecret(secretName, { abortSignal: signal });
      if (secret.value === undefined || secret.value === '') throw fail('VaultSecretEmpty', 'has no value');
      return secret.value;
    } catch (err) {
      if (err instanceof SecretResolutionError) throw err;
      const refusal = entraRefusal(err);
      if (refusal !== undefined) {
        throw fail(
          'VaultAuthenticationFailed',
          `Entra ID refused app ${config.clientId} in tenant ${config.tenantId} (${refusal})`,
          err,
        );
      }
      const status = statusOf(err);
      if (status === 404) throw fail('VaultSecretNotFound', 'not found in the vault', err);
      if (status === 403) {
        throw fail('VaultAccessDenied', `the vault refused app ${config.clientId} access (403)`, err);
      }
      // A name the vault refuses (400 BadParameter) or another request it will never serve.
      if (status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429) {
        throw fail('VaultRequestRefused', `the vault answered ${status} ${codeOf(err)}`, err);
      }
      const outage = azureOutage(err, signal);
      if (outage === undefined) throw err;
      throw new VaultUnavailableError({
        namespace: holder.namespace,
        secretName,
        vault: config.url,
        detail: `Azure Key Vault ${config.url} unavailable: ${outage} (${role} of ${describeHolder(holder)})`,
        cause: err,
      });
    }
  }

  private configOf(holder: GitHubConfigHolder): AzureKeyVaultConfig {
    const config = holder.vaultConfig?.azureKeyVault;
    const missing = CONFIG_FIELDS.filter((field) => !config?.[field]?.trim());
    if (config === undefined || missing.length > 0) {
      throw new SecretResolutionError({
        reason: 'InvalidVaultConfig',
        namespace: holder.namespace,
        detail: `${describeHolder(holder)} vaultConfig.azureKeyVault is missing ${missing
          .map((f) => `${f}`)
          .join(', ')} (type azure_key_vault needs url, tenantId, clientId and certificatePath)`,
      });
    }
    let url: URL | undefined;
    try {
      url = new URL(config.url);
    } catch {
      url = undefined;
    }
    if (url?.protocol !== 'https:') {
      throw new SecretResolutionError({
        reason: 'InvalidVaultConfig',
        namespace: holder.namespace,
        detail: `${describeHolder(holder)} vaultConfig.azureKeyVault.url must be an https:// URL (the vault's DNS name)`,
      });
    }
    return config;
  }

  /**
   * The app's certificate with its private key (PEM), read on every resolution so a rotated file takes
   * effect at once; the path is on the controller's file system (a mounted Secret).
   */
  private async certificate(holder: GitHubConfigHolder, config: AzureKeyVaultConfig): Promise<string> {
    const invalid = (detail: string) =>
      new SecretResolutionError({
        reason: 'InvalidVaultConfig',
        namespace: holder.namespace,
        detail: `${describeHolder(holder)} vaultConfig.azureKeyVault.certificatePath ${config.certificatePath}: ${detail}`,
      });
    let file: Buffer;
    try {
      file = await readFile(config.certificatePath);
    } catch (err) {
      throw invalid(`cannot be read in the controller (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    const pem = file.toString('utf8');
    if (!/-----BEGIN CERTIFICATE-----/.test(pem) || !/-----BEGIN (RSA |EC )?PRIVATE KEY-----/.test(pem)) {
      // @azure/identity's ClientCertificateCredential reads PEM only; upstream's Go SDK also reads a
      // PKCS#12 file without a password. Said so, with the conversion, rather than a bare "not PEM".
      if (looksLikePkcs12(file)) {
        throw invalid(
          `is PKCS#12 (.pfx), which ARO does not read (upstream does): convert it to PEM with the unencrypted key, ` +
            `e.g. openssl pkcs12 -in cert.pfx -out cert.pem -nodes -passin pass: (docs/secrets.md)`,
        );
      }
      throw invalid('must hold the certificate and its unencrypted private key in PEM (PKCS#12 is not read)');
    }
    return pem;
  }
}

/**
 * Whether a file is DER PKCS#12: an ASN.1 SEQUENCE whose first element is the INTEGER version 3
 * (RFC 7292 PFX). Enough to name the format in the error, not to read it.
 */
function looksLikePkcs12(file: Buffer): boolean {
  if (file.length < 8 || file[0] !== 0x30) return false;
  const lengthOctets = file[1] & 0x80 ? (file[1] & 0x7f) + 1 : 1;
  const version = 1 + lengthOctets;
  return file[version] === 0x02 && file[version + 1] === 0x01 && file[version + 2] === 0x03;
}
