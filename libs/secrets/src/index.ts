export {
  credentialsFromJson,
  credentialsFromSecretData,
  GITHUB_APP_ID_KEY,
  GITHUB_APP_INSTALLATION_ID_KEY,
  GITHUB_APP_PRIVATE_KEY_KEY,
  GITHUB_TOKEN_KEY,
  type SecretLocation,
} from './app-credentials';
export {
  configHolderOf,
  configHolderOfListener,
  configHolderOfRunnerSet,
  configHolderOfScaleSet,
  type GitHubConfigHolder,
} from './config-holder';
export { AzureKeyVaultSource } from './azure-key-vault/azure-key-vault-source';
export type { AzureKeyVaultOptions } from './azure-key-vault/azure-key-vault-options';
export { CREDENTIAL_SOURCES, vaultTypeOf, type CredentialSource } from './credential-source';
export {
  isSecretResolutionError,
  isVaultUnavailable,
  SecretResolutionError,
  type SecretResolutionErrorInit,
  type SecretResolutionReason,
  VaultUnavailableError,
  type VaultUnavailableErrorInit,
} from './errors';
export { KubernetesSecretSource } from './kubernetes-secret-source';
export {
  PROXY_PASSWORD_KEY,
  PROXY_USERNAME_KEY,
  proxyCredentialsFromSecretData,
  type ProxyCredentials,
} from './proxy';
export { parseCertificateBundle, type CertificateBundle } from './root-cas';
export {
  isCredentialFailure,
  RememberedCredentialFailure,
  SecretResolver,
  type SecretResolverOptions,
} from './secret-resolver';
export {
  CredentialSourceProvider,
  SECRETS_MODULE_OPTIONS,
  SecretsModule,
  type SecretsModuleExtras,
  type SecretsModuleOptions,
} from './secrets.module';
