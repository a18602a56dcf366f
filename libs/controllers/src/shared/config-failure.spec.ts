import { SecretResolutionError, VaultUnavailableError } from '@aro/secrets';
import { isUnfixableByRetry, isUnusableConfig } from './config-failure';

/** What the Azure SDK throws for a vault answer or a dropped connection (RestError's fields). */
function restError(fields: { statusCode?: number; code?: string }, message = 'vault request failed'): Error {
  return Object.assign(new Error(message), { name: 'RestError', ...fields });
}

function vaultOutage(cause: unknown): VaultUnavailableError {
  return new VaultUnavailableError({
    namespace: 'ns',
    secretName: 'gh-config',
    vault: 'https://v.vault.azure.net',
    detail: 'Azure Key Vault https://v.vault.azure.net unavailable: the vault answered 503',
    cause,
  });
}

describe('a vault that is out for now, on the runner side', () => {
  it.each([
    ['a 503', restError({ statusCode: 503, code: 'ServiceUnavailable' })],
    ['a reset connection', restError({ code: 'ECONNRESET' }, 'socket hang up')],
    // The source decided it is an outage; a code the Actions retry rule would call final does not undo that.
    ['whatever code its cause carries', restError({ code: 'ERR_INVALID_PROTOCOL' })],
  ])('is retried at the controller backoff and never taken for an unusable configuration: %s', (_, cause) => {
    const err = vaultOutage(cause);
    // As the runner's registration path wraps it.
    const wrapped = new Error(`failed to get actions client for generating JIT config: ${err.message}`, {
      cause: err,
    });
    for (const e of [err, wrapped]) {
      expect(isUnfixableByRetry(e)).toBe(false);
      // A runner without a recorded ID is not taken for one that never registered.
      expect(isUnusableConfig(e)).toBe(false);
    }
  });

  it('keeps a vault refusal an unusable configuration', () => {
    const refused = new SecretResolutionError({
      reason: 'VaultAccessDenied',
      namespace: 'ns',
      secretName: 'gh-config',
      objectKind: 'vault secret',
      detail: 'the vault refused app x access (403)',
    });
    expect(isUnusableConfig(refused)).toBe(true);
  });
});
