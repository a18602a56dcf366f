import { InvalidConfigUrlError, parseGitHubConfigUrl, registrationTokenPath } from './config-url';

describe('parseGitHubConfigUrl', () => {
  const noEnv = {};

  it.each([
    ['https://github.com/org', 'organization', { organization: 'org' }],
    ['https://github.com/org/', 'organization', { organization: 'org' }],
    ['https://github.com/org/repo', 'repository', { organization: 'org', repository: 'repo' }],
    ['https://github.com/enterprises/ent', 'enterprise', { enterprise: 'ent' }],
    ['https://github.com/Enterprises/ent', 'enterprise', { enterprise: 'ent' }],
  ])('reads the scope of %s', (url, scope, names) => {
    const c = parseGitHubConfigUrl(url, noEnv);
    expect(c.scope).toBe(scope);
    expect({ enterprise: c.enterprise, organization: c.organization, repository: c.repository }).toEqual({
      enterprise: '',
      organization: '',
      repository: '',
      ...names,
    });
  });

  it.each([
    ['https://github.com/org', true, 'https://api.github.com/orgs/org/actions/runners/registration-token'],
    [
      'https://www.github.com/org',
      true,
      'https://api.github.com/orgs/org/actions/runners/registration-token',
    ],
    [
      'http://github.localhost:8080/org',
      true,
      'http://api.github.localhost:8080/orgs/org/actions/runners/registration-token',
    ],
    [
      'https://octo.ghe.com/org',
      true,
      'https://api.octo.ghe.com/orgs/org/actions/runners/registration-token',
    ],
    [
      'https://ghes.corp.example/org',
      false,
      'https://ghes.corp.example/api/v3/orgs/org/actions/runners/registration-token',
    ],
    [
      'http://127.0.0.1:8080/org',
      false,
      'http://127.0.0.1:8080/api/v3/orgs/org/actions/runners/registration-token',
    ],
  ])('derives the REST API of %s', (url, hosted, tokenUrl) => {
    const c = parseGitHubConfigUrl(url, noEnv);
    expect(c.isHosted).toBe(hosted);
    expect(c.gitHubApiUrl(registrationTokenPath(c)).href).toBe(tokenUrl);
  });

  it('builds the registration-token path for each scope', () => {
    expect(registrationTokenPath(parseGitHubConfigUrl('https://h.example/enterprises/e', noEnv))).toBe(
      '/enterprises/e/actions/runners/registration-token',
    );
    expect(registrationTokenPath(parseGitHubConfigUrl('https://h.example/o/r', noEnv))).toBe(
      '/repos/o/r/actions/runners/registration-token',
    );
  });

  it('treats every host as GHES when GITHUB_ACTIONS_FORCE_GHES is set, even to an empty value', () => {
    const c = parseGitHubConfigUrl('https://github.com/org', { GITHUB_ACTIONS_FORCE_GHES: '' });
    expect(c.isHosted).toBe(false);
    expect(c.gitHubApiUrl('/actions/runner-registration').href).toBe(
      'https://github.com/api/v3/actions/runner-registration',
    );
  });

  it.each([
    ['https://github.com', 'should point to an enterprise, org, or repository'],
    ['https://github.com/org/repo/extra', 'should point to an enterprise, org, or repository'],
    ['github.com/org', 'not an absolute URL'],
    ['ftp://github.com/org', 'unsupported scheme ftp'],
  ])('rejects %s naming the URL and the reason', (url, reason) => {
    let err: unknown;
    try {
      parseGitHubConfigUrl(url, noEnv);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InvalidConfigUrlError);
    expect((err as Error).message).toContain(JSON.stringify(url));
    expect((err as Error).message).toContain(reason);
  });
});
