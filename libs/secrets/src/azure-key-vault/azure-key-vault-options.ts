/**
 * How the controller reaches Azure, the same for every scale set: what a set's `vaultConfig` cannot
 * say (upstream's Go SDK takes them from the environment too). All optional; the defaults are Azure's
 * public cloud with its certificate checks.
 */
export interface AzureKeyVaultOptions {
  /**
   * The Entra ID authority, e.g. `https://login.microsoftonline.us` for a sovereign cloud; the SDK's
   * default (`AZURE_AUTHORITY_HOST`, else the public cloud) when unset.
   */
  authorityHost?: string;
  /** Skip Entra's instance discovery: for an authority the public metadata does not list. */
  disableInstanceDiscovery?: boolean;
  /**
   * Accept a bearer challenge whose resource is not the vault's own domain (a private endpoint or
   * proxy under another name). Off by default: the check stops a token being sent to a look-alike.
   */
  disableChallengeResourceVerification?: boolean;
  /** CA certificates (PEM) trusted beside the system roots, for the vault and the authority. */
  caCertificates?: string[];
  /** Retries of one vault or token call the SDK makes on throttling and 5xx; 2 by default. */
  maxRetries?: number;
}
