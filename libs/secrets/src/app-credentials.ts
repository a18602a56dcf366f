import { createPrivateKey } from 'node:crypto';
import type { GitHubCredentials } from '@aro/actions';
import { SecretResolutionError } from './errors';

/** The keys of a GitHub config Secret, as upstream ARC and its Helm chart name them. */
export const GITHUB_TOKEN_KEY = 'github_token';
export const GITHUB_APP_ID_KEY = 'github_app_id';
export const GITHUB_APP_INSTALLATION_ID_KEY = 'github_app_installation_id';
export const GITHUB_APP_PRIVATE_KEY_KEY = 'github_app_private_key';

const APP_KEYS = [GITHUB_APP_ID_KEY, GITHUB_APP_INSTALLATION_ID_KEY, GITHUB_APP_PRIVATE_KEY_KEY] as const;

export interface SecretLocation {
  namespace: string;
  name: string;
  objectKind?: 'Secret' | 'vault secret';
}

/**
 * Turns the decoded data of a GitHub config Secret into credentials: exactly one of a PAT
 * (`github_token`) or the full GitHub App triple. A half-filled App, or a PAT next to App keys, is
 * refused rather than guessed at: which identity the operator acts as must be what the Secret says.
 *
 * Empty or whitespace-only values count as absent, because `kubectl create secret --from-literal=k=`
 * and templated charts produce them for settings a person meant to leave out.
 */
export function credentialsFromSecretData(
  data: Readonly<Record<string, string | undefined>>,
  where: SecretLocation,
): GitHubCredentials {
  const fail = (reason: SecretResolutionError['reason'], detail: string, key?: string): never => {
    throw new SecretResolutionError({
      reason,
      namespace: where.namespace,
      secretName: where.name,
      objectKind: where.objectKind,
      key,
      detail,
    });
  };
  const present = (key: string): string | undefined => {
    const value = data[key];
    return value === undefined || value.trim() === '' ? undefined : value;
  };

  const token = present(GITHUB_TOKEN_KEY);
  const appKeysGiven = APP_KEYS.filter((k) => present(k) !== undefined);

  if (token !== undefined && appKeysGiven.length > 0) {
    return fail(
      'BothCredentialKinds',
      `both PAT and GitHub App credentials provided (${GITHUB_TOKEN_KEY} and ${appKeysGiven.join(', ')}); ` +
        'provide only one',
    );
  }
  if (token !== undefined) {
    // A token copied from a file usually carries a newline, which would corrupt the Authorization header.
    return { kind: 'pat', token: token.trim() };
  }
  if (appKeysGiven.length === 0) {
    return fail(
      'NoCredentials',
      `no credentials provided: set either ${GITHUB_TOKEN_KEY}, or ${APP_KEYS.join(', ')}`,
    );
  }
  const missing = APP_KEYS.find((k) => present(k) === undefined);
  if (missing !== undefined) {
    return fail('KeyMissing', `missing; GitHub App credentials need all of ${APP_KEYS.join(', ')}`, missing);
  }

  const appId = present(GITHUB_APP_ID_KEY)!.trim();
  const installationText = present(GITHUB_APP_INSTALLATION_ID_KEY)!.trim();
  const installationId = Number(installationText);
  if (!/^[0-9]+$/.test(installationText) || !Number.isSafeInteger(installationId) || installationId <= 0) {
    return fail('InvalidInstallationId', 'must be a positive integer', GITHUB_APP_INSTALLATION_ID_KEY);
  }

  const privateKey = present(GITHUB_APP_PRIVATE_KEY_KEY)!;
  const keyProblem = privateKeyProblem(privateKey);
  if (keyProblem !== undefined) {
    return fail('InvalidPrivateKey', keyProblem, GITHUB_APP_PRIVATE_KEY_KEY);
  }
  return { kind: 'app', appId, installationId, privateKey };
}

/**
 * The same keys as a JSON object, the form a vault stores them in (upstream `appconfig.FromJSONString`).
 * Non-string values are accepted for the installation id only, as vault tooling writes numbers.
 */
export function credentialsFromJson(json: string, where: SecretLocation): GitHubCredentials {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    // The parser's message quotes the input, which is the secret itself.
    throw new SecretResolutionError({
      reason: 'InvalidJson',
      namespace: where.namespace,
      secretName: where.name,
      objectKind: where.objectKind,
      detail: 'is not valid JSON',
    });
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new SecretResolutionError({
      reason: 'InvalidJson',
      namespace: where.namespace,
      secretName: where.name,
      objectKind: where.objectKind,
      detail: 'must be a JSON object with the GitHub config keys',
    });
  }
  const data: Record<string, string> = {};
  for (const [key, value] of Object.entries(parsed as Record<string, unknown>)) {
    if (typeof value === 'string') data[key] = value;
    else if (key === GITHUB_APP_INSTALLATION_ID_KEY && typeof value === 'number') data[key] = String(value);
  }
  return credentialsFromSecretData(data, where);
}

/**
 * GitHub signs App JWTs with RS256 only, so anything but an RSA private key in PEM would surface
 * much later as an opaque 401 from GitHub; checking here names the key instead.
 */
function privateKeyProblem(pem: string): string | undefined {
  if (!pem.includes('-----BEGIN')) return 'is not a PEM private key (no "-----BEGIN" header)';
  let keyType: string | undefined;
  try {
    keyType = createPrivateKey({ key: pem, format: 'pem' }).asymmetricKeyType;
  } catch {
    // OpenSSL's message can echo key material; say what is wrong in our own words.
    return 'is not a PEM private key (it does not parse as one)';
  }
  if (keyType !== 'rsa') return `is a ${keyType ?? 'non-RSA'} key; GitHub App private keys are RSA`;
  return undefined;
}
