import { generateKeyPairSync } from 'node:crypto';
import { credentialsFromJson, credentialsFromSecretData } from './app-credentials';
import { SecretResolutionError } from './errors';

const where = { namespace: 'team-a', name: 'gh-config' };
const rsaKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
  type: 'pkcs1',
  format: 'pem',
}) as string;
const ecKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({
  type: 'pkcs8',
  format: 'pem',
}) as string;

function failure(fn: () => unknown): SecretResolutionError {
  try {
    fn();
  } catch (e) {
    if (e instanceof SecretResolutionError) return e;
    throw e;
  }
  throw new Error('expected a SecretResolutionError, got a result');
}

describe('credentialsFromSecretData', () => {
  it('reads a PAT and drops the trailing newline a file-based secret carries', () => {
    expect(credentialsFromSecretData({ github_token: 'ghp_abc\n' }, where)).toEqual({
      kind: 'pat',
      token: 'ghp_abc',
    });
  });

  it('reads a GitHub App triple with a numeric app id', () => {
    expect(
      credentialsFromSecretData(
        { github_app_id: '12345', github_app_installation_id: '678', github_app_private_key: rsaKey },
        where,
      ),
    ).toEqual({ kind: 'app', appId: '12345', installationId: 678, privateKey: rsaKey });
  });

  it('accepts a client id in github_app_id', () => {
    const creds = credentialsFromSecretData(
      { github_app_id: 'Iv23liAbCdEf', github_app_installation_id: '9', github_app_private_key: rsaKey },
      where,
    );
    expect(creds).toMatchObject({ kind: 'app', appId: 'Iv23liAbCdEf', installationId: 9 });
  });

  it('refuses a PAT next to GitHub App keys, naming the secret', () => {
    const e = failure(() =>
      credentialsFromSecretData({ github_token: 'ghp_abc', github_app_id: '1' }, where),
    );
    expect(e.reason).toBe('BothCredentialKinds');
    expect(e.message).toContain('Secret team-a/gh-config');
    expect(e.message).toContain('both PAT and GitHub App credentials provided');
    expect(e.message).not.toContain('ghp_abc');
  });

  it('refuses a secret with no credential keys', () => {
    const e = failure(() => credentialsFromSecretData({ unrelated: 'x' }, where));
    expect(e.reason).toBe('NoCredentials');
    expect(e.message).toMatch(/no credentials provided/);
  });

  it('treats empty values as absent', () => {
    const e = failure(() => credentialsFromSecretData({ github_token: '  ', github_app_id: '' }, where));
    expect(e.reason).toBe('NoCredentials');
  });

  it.each(['github_app_id', 'github_app_installation_id', 'github_app_private_key'])(
    'names the missing App key %s',
    (missing) => {
      const full: Record<string, string> = {
        github_app_id: '1',
        github_app_installation_id: '2',
        github_app_private_key: rsaKey,
      };
      delete full[missing];
      const e = failure(() => credentialsFromSecretData(full, where));
      expect(e).toMatchObject({
        reason: 'KeyMissing',
        key: missing,
        namespace: 'team-a',
        secretName: 'gh-config',
      });
      expect(e.message).toContain(`key "${missing}"`);
    },
  );

  it.each(['12a', '-3', '0', '1.5', '99999999999999999999'])('refuses installation id %p', (id) => {
    const e = failure(() =>
      credentialsFromSecretData(
        { github_app_id: '1', github_app_installation_id: id, github_app_private_key: rsaKey },
        where,
      ),
    );
    expect(e).toMatchObject({ reason: 'InvalidInstallationId', key: 'github_app_installation_id' });
    expect(e.message).not.toContain(id);
  });

  it.each([
    ['not PEM at all', 'just-some-text'],
    ['PEM that does not parse', '-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n'],
  ])('refuses a private key that is %s, without echoing it', (_label, key) => {
    const e = failure(() =>
      credentialsFromSecretData(
        { github_app_id: '1', github_app_installation_id: '2', github_app_private_key: key },
        where,
      ),
    );
    expect(e).toMatchObject({ reason: 'InvalidPrivateKey', key: 'github_app_private_key' });
    expect(e.message).not.toContain(key.trim());
  });

  it('refuses a non-RSA private key, which GitHub cannot verify', () => {
    const e = failure(() =>
      credentialsFromSecretData(
        { github_app_id: '1', github_app_installation_id: '2', github_app_private_key: ecKey },
        where,
      ),
    );
    expect(e.reason).toBe('InvalidPrivateKey');
    expect(e.message).toContain('ec key');
  });
});

describe('credentialsFromJson', () => {
  const vault = { ...where, objectKind: 'vault secret' as const };

  it('reads the same keys from a vault JSON value, with a numeric installation id', () => {
    const json = JSON.stringify({
      github_app_id: '5',
      github_app_installation_id: 6,
      github_app_private_key: rsaKey,
    });
    expect(credentialsFromJson(json, vault)).toMatchObject({ kind: 'app', appId: '5', installationId: 6 });
  });

  it('refuses malformed JSON without quoting it', () => {
    const e = failure(() => credentialsFromJson('{"github_token": "ghp_secret"', vault));
    expect(e.reason).toBe('InvalidJson');
    expect(e.message).toContain('vault secret team-a/gh-config');
    expect(e.message).not.toContain('ghp_secret');
  });

  it('refuses JSON that is not an object', () => {
    expect(failure(() => credentialsFromJson('"ghp_x"', vault)).reason).toBe('InvalidJson');
  });
});
