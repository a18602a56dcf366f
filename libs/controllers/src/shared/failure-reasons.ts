import { ProxyConfig, ScaleSetReasons } from '@aro/api';
import { InvalidConfigUrlError, isProxyFailure, isTlsFailure, isUnauthorized } from '@aro/actions';
import { isCredentialFailure, isSecretResolutionError, isVaultUnavailable } from '@aro/secrets';
import { describeError } from './describe-error';

export interface ClassifiedFailure {
  reason: string;
  message: string;
}

/**
 * Names what a person must fix when a scale set cannot be reached, instead of a bare error: a bad or
 * missing credential, a CA the server's certificate does not chain to, a proxy that refuses or cannot
 * be reached, a runner group that does not exist, a vault that cannot serve the credentials (or is
 * out for now). Anything else is the Actions service's own error.
 */
export function classifyScaleSetFailure(err: unknown, proxy: ProxyConfig | undefined): ClassifiedFailure {
  const message = describeError(err);
  const proxySecrets = [proxy?.http?.credentialSecretRef, proxy?.https?.credentialSecretRef].filter(
    (name): name is string => !!name,
  );
  // Said where it arose (the credential source), so an outage of the vault is not taken for one of
  // the Actions service: a person looks at the vault, and the set is retried with its backoff.
  if (isVaultUnavailable(err)) return { reason: ScaleSetReasons.vaultUnavailable, message };
  if (isSecretResolutionError(err)) {
    if (
      err.reason === 'ProxyCredentialsMissing' ||
      err.reason === 'InvalidProxyUrl' ||
      (err.secretName !== undefined && proxySecrets.includes(err.secretName))
    ) {
      return { reason: ScaleSetReasons.proxyFailure, message };
    }
    if (
      err.reason === 'ConfigMapNotFound' ||
      err.reason === 'InvalidCertificate' ||
      err.reason === 'InvalidTLSConfig'
    ) {
      return { reason: ScaleSetReasons.tlsFailure, message };
    }
    if (err.reason.startsWith('Vault') || err.reason === 'InvalidVaultConfig') {
      return { reason: ScaleSetReasons.vaultFailure, message };
    }
    return { reason: ScaleSetReasons.invalidCredentials, message };
  }
  // The transport named these where they happened (a TLS error code, the proxy client's own failure).
  if (isTlsFailure(err)) return { reason: ScaleSetReasons.tlsFailure, message };
  if (isProxyFailure(err)) return { reason: ScaleSetReasons.proxyFailure, message };
  // A refused credential, whether the service refused it just now or the resolver remembers that it did
  // (it answers the same for a while instead of asking the service once per caller).
  if (isCredentialFailure(err) || isUnauthorized(err)) {
    return { reason: ScaleSetReasons.invalidCredentials, message };
  }
  if (err instanceof RunnerGroupNotFoundError)
    return { reason: ScaleSetReasons.runnerGroupNotFound, message };
  if (err instanceof ScaleSetClaimedError) return { reason: ScaleSetReasons.scaleSetNameConflict, message };
  // A config URL that names no org, repo or enterprise (or is not a URL) is the spec's fault, not the
  // service's: said so, rather than as an Actions service error a person would wait out.
  if (err instanceof InvalidConfigUrlError) return { reason: ScaleSetReasons.invalidConfiguration, message };
  return { reason: ScaleSetReasons.actionsServiceError, message };
}

export class RunnerGroupNotFoundError extends Error {
  override readonly name = 'RunnerGroupNotFoundError';
}

/** The scale set this set would adopt is already another AutoscalingRunnerSet's (see `claimantOf`). */
export class ScaleSetClaimedError extends Error {
  override readonly name = 'ScaleSetClaimedError';
}
