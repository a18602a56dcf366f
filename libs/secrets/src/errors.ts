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

export interface VaultUnavailableErrorInit {
  namespace: string;
  /** The vault entry that was being read. */
  secretName: string;
  /** The vault (its URL), as the holder's vaultConfig names it. */
  vault: string;
  /** What failed and how, without any value: `the vault answered 503 ServiceUnavailable`. */
  detail: string;
  cause?: unknown;
}

/**
 * The vault (or the identity service it needs a token from) could not answer just now: a 5xx,
 * throttling, a connection reset or refused, no answer before the deadline. Nothing about the
 * holder's configuration is known to be wrong, so this is deliberately not a
 * {@link SecretResolutionError}: callers retry it with their backoff and must not treat the holder as
 * one whose configuration cannot work (a runner is not failed, nor is a registration it may hold
 * given up for lost). Names the vault entry and the vault, never a value.
 */
export class VaultUnavailableError extends Error {
  readonly reason = 'VaultUnavailable';
  readonly namespace: string;
  readonly secretName: string;
  readonly vault: string;

  constructor(init: VaultUnavailableErrorInit) {
    super(
      `vault secret ${init.namespace}/${init.secretName}: ${init.detail}; retried with backoff`,
      init.cause === undefined ? undefined : { cause: init.cause },
    );
    this.name = 'VaultUnavailableError';
    this.namespace = init.namespace;
    this.secretName = init.secretName;
    this.vault = init.vault;
  }
}

/** Whether `err`, or an error it wraps, says a vault could not answer for now (retry, with backoff). */
export function isVaultUnavailable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (e instanceof VaultUnavailableError) return true;
  }
  return false;
}
