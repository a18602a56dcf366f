/**
 * Why a holder's GitHub credentials, proxy or CA could not be resolved. A controller that gets one
 * of these cannot fix it by retrying soon: the object points at configuration a person must change,
 * so callers can tell it apart from a transient API error and say so on the object.
 */
export type SecretResolutionReason =
  | 'SecretNotFound'
  | 'KeyMissing'
  | 'BothCredentialKinds'
  | 'NoCredentials'
  | 'InvalidInstallationId'
  | 'InvalidPrivateKey'
  | 'InvalidJson'
  | 'ProxyCredentialsMissing'
  | 'InvalidProxyUrl'
  | 'ConfigMapNotFound'
  | 'InvalidCertificate'
  | 'InvalidTLSConfig'
  | 'NoCredentialSource'
  | 'InvalidVaultConfig'
  | 'VaultSecretNotFound'
  | 'VaultSecretEmpty'
  | 'VaultAccessDenied'
  | 'VaultAuthenticationFailed'
  | 'VaultRequestRefused'
  | 'InvalidHolder';

export interface SecretResolutionErrorInit {
  reason: SecretResolutionReason;
  namespace: string;
  /** The Secret (or ConfigMap, or vault entry) that was read. */
  secretName?: string;
  /** What `secretName` names, for the message; `Secret` unless said otherwise. */
  objectKind?: 'Secret' | 'ConfigMap' | 'vault secret';
  key?: string;
  /** What went wrong, without the secret's values. */
  detail: string;
  cause?: unknown;
}

/**
 * Names the namespace, secret and key involved, never a value read from them: messages end up in
 * logs, events and object status, where a token must not.
 */
export class SecretResolutionError extends Error {
  readonly reason: SecretResolutionReason;
  readonly namespace: string;
  readonly secretName?: string;
  readonly key?: string;

  constructor(init: SecretResolutionErrorInit) {
    super(describe(init), init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'SecretResolutionError';
    this.reason = init.reason;
    this.namespace = init.namespace;
    this.secretName = init.secretName;
    this.key = init.key;
  }
}

function describe({ namespace, secretName, objectKind, key, detail }: SecretResolutionErrorInit): string {
  const where =
    secretName === undefined
      ? `namespace ${namespace}`
      : `${objectKind ?? 'Secret'} ${namespace}/${secretName}`;
  return key === undefined ? `${where}: ${detail}` : `${where} key "${key}": ${detail}`;
}

export function isSecretResolutionError(e: unknown): e is SecretResolutionError {
  return e instanceof SecretResolutionError;
}
