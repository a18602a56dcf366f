import { isRetryable } from '@aro/actions';
import { isCredentialFailure, isSecretResolutionError, isVaultUnavailable } from '@aro/secrets';

function inCauseChain(err: unknown, match: (e: Error) => boolean): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (match(e)) return true;
  }
  return false;
}

/**
 * Whether `err` says the runner's GitHub configuration is wrong in a way only a person can fix: the
 * service refused the credential (401/403, 404 of the config URL, or such a refusal remembered by the
 * resolver), or the Actions client's one retry rule ({@link isRetryable}) says asking again cannot
 * help (the config URL is not one, a 4xx, a certificate not trusted, a proxy refusing the
 * credentials). Retrying such a failure at the controller's error backoff asks the service again
 * every few seconds for nothing, so these get a slower, per-runner backoff.
 *
 * A vault that is out for now (5xx, throttled, unreachable: `VaultUnavailable`) is none of these,
 * whatever the transport's error says: it is retried at the controller's backoff, like the Actions
 * service's own outages.
 */
export function isUnfixableByRetry(err: unknown): boolean {
  if (isVaultUnavailable(err)) return false;
  return isCredentialFailure(err) || !isRetryable(err);
}

/**
 * Whether no Actions client can be built from the runner's configuration: the failures above, or a
 * Secret (ConfigMap, vault entry) the configuration names that is missing or unusable. Nothing about
 * the service can be learnt through such a configuration, by this controller or by anyone else.
 * Never a vault that is out for now: a registration made through it before the outage still exists,
 * and taking the runner for one that never registered would drop the finalizer that records it.
 */
export function isUnusableConfig(err: unknown): boolean {
  if (isVaultUnavailable(err)) return false;
  return isUnfixableByRetry(err) || inCauseChain(err, isSecretResolutionError);
}
