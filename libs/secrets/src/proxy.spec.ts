import { SecretResolutionError } from './errors';
import { proxyCredentialsFromSecretData, resolveProxySettings, type ProxyCredentials } from './proxy';

const where = { namespace: 'team-a', holder: 'EphemeralRunner r1' };
const secrets: Record<string, ProxyCredentials> = {
  'proxy-creds': { username: 'svc@corp', password: 'p:ss/word' },
};
const lookup = async (name: string): Promise<ProxyCredentials> => {
  const found = secrets[name];
  if (found === undefined) throw new Error(`test lookup: no ${name}`);
  return found;
};

describe('resolveProxySettings', () => {
  it('is undefined without a proxy, or with nothing configured in it', async () => {
    await expect(resolveProxySettings(undefined, where, lookup)).resolves.toBeUndefined();
    await expect(
      resolveProxySettings({ http: { url: '' }, noProxy: [' '] }, where, lookup),
    ).resolves.toBeUndefined();
  });

  it('passes URLs and noProxy through when no credentials are referenced', async () => {
    await expect(
      resolveProxySettings(
        {
          http: { url: 'http://proxy.corp:3128' },
          https: { url: 'http://proxy.corp:3129' },
          noProxy: ['.svc', 'localhost'],
        },
        where,
        lookup,
      ),
    ).resolves.toEqual({
      http: 'http://proxy.corp:3128/',
      https: 'http://proxy.corp:3129/',
      noProxy: ['.svc', 'localhost'],
    });
  });

  it('puts the credential secret into the URL userinfo, percent-encoded', async () => {
    const settings = await resolveProxySettings(
      { https: { url: 'http://proxy.corp:3128', credentialSecretRef: 'proxy-creds' } },
      where,
      lookup,
    );
    expect(settings).toEqual({ https: 'http://svc%40corp:p%3Ass%2Fword@proxy.corp:3128/' });
    const url = new URL(settings!.https!);
    expect(decodeURIComponent(url.username)).toBe('svc@corp');
    expect(decodeURIComponent(url.password)).toBe('p:ss/word');
  });

  it('reads a bare host:port as an http proxy, as Go and curl do', async () => {
    await expect(resolveProxySettings({ http: { url: 'proxy.corp:3128' } }, where, lookup)).resolves.toEqual({
      http: 'http://proxy.corp:3128/',
    });
  });

  it.each([
    ['not a URL', 'http://proxy corp', 'is not a URL'],
    ['of another scheme', 'socks5://proxy.corp:1080', 'must be an http:// or https:// URL'],
  ])('refuses a proxy URL that is %s, without echoing it', async (_label, url, message) => {
    const result = resolveProxySettings({ http: { url } }, where, lookup);
    await expect(result).rejects.toBeInstanceOf(SecretResolutionError);
    await expect(result).rejects.toMatchObject({ reason: 'InvalidProxyUrl' });
    await expect(result).rejects.toThrow(message);
    await expect(result).rejects.toThrow('EphemeralRunner r1 spec proxy.http.url');
  });
});

describe('proxyCredentialsFromSecretData', () => {
  const secret = { namespace: 'team-a', name: 'proxy-creds' };

  it('reads username and password', () => {
    expect(proxyCredentialsFromSecretData({ username: 'u', password: 'p' }, secret)).toEqual({
      username: 'u',
      password: 'p',
    });
  });

  it.each(['username', 'password'])('names the missing key %s', (missing) => {
    const data: Record<string, string> = { username: 'u', password: 'p' };
    delete data[missing];
    expect(() => proxyCredentialsFromSecretData(data, secret)).toThrow(
      `Secret team-a/proxy-creds key "${missing}": missing`,
    );
  });
});
