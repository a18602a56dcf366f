import { ScaleSetReasons } from '@aro/api';
import { SecretResolutionError, VaultUnavailableError } from '@aro/secrets';
import { classifyScaleSetFailure } from './failure-reasons';

describe('classifyScaleSetFailure of a vault-backed set', () => {
  const outage = new VaultUnavailableError({
    namespace: 'ns',
    secretName: 'gh-config',
    vault: 'https://v.vault.azure.net',
    detail:
      'Azure Key Vault https://v.vault.azure.net unavailable: the vault answered 503 ServiceUnavailable (GitHub config of AutoscalingRunnerSet s1)',
    cause: Object.assign(new Error('The service is temporarily unavailable.'), { statusCode: 503 }),
  });

  it('calls a vault outage VaultUnavailable, naming the key and the vault, not an Actions service error', () => {
    expect(classifyScaleSetFailure(outage, undefined)).toEqual({
      reason: ScaleSetReasons.vaultUnavailable,
      message:
        'vault secret ns/gh-config: Azure Key Vault https://v.vault.azure.net unavailable: the vault answered 503 ServiceUnavailable (GitHub config of AutoscalingRunnerSet s1); retried with backoff',
    });
    // Also when the caller wrapped it.
    expect(classifyScaleSetFailure(new Error('resolving', { cause: outage }), undefined).reason).toBe(
      ScaleSetReasons.vaultUnavailable,
    );
  });

  it('keeps a refusal a VaultFailure', () => {
    const refused = new SecretResolutionError({
      reason: 'VaultSecretNotFound',
      namespace: 'ns',
      secretName: 'gh-config',
      objectKind: 'vault secret',
      detail: 'not found in the vault',
    });
    expect(classifyScaleSetFailure(refused, undefined).reason).toBe(ScaleSetReasons.vaultFailure);
  });
});
