import { normaliseProxyUrl, noProxyMatcher } from './dispatchers';

describe('noProxyMatcher', () => {
  const bypass = (entries: string[], url: string) => noProxyMatcher(entries)(new URL(url));

  it('matches a domain and its subdomains, and with a leading dot only subdomains', () => {
    expect(bypass(['corp.example'], 'https://corp.example/x')).toBe(true);
    expect(bypass(['corp.example'], 'https://ghes.corp.example/x')).toBe(true);
    expect(bypass(['.corp.example'], 'https://corp.example/x')).toBe(false);
    expect(bypass(['.corp.example'], 'https://ghes.corp.example/x')).toBe(true);
    expect(bypass(['*.corp.example'], 'https://ghes.corp.example/x')).toBe(true);
    expect(bypass(['corp.example'], 'https://notcorp.example/x')).toBe(false);
  });

  it('matches a port only when given, using the scheme default otherwise', () => {
    expect(bypass(['ghes.example:8443'], 'https://ghes.example:8443/')).toBe(true);
    expect(bypass(['ghes.example:8443'], 'https://ghes.example/')).toBe(false);
    expect(bypass(['ghes.example:443'], 'https://ghes.example/')).toBe(true);
  });

  it('matches IPs and CIDR ranges, and * matches everything', () => {
    expect(bypass(['10.0.0.0/8'], 'http://10.1.2.3:8080/')).toBe(true);
    expect(bypass(['10.0.0.0/8'], 'http://11.1.2.3/')).toBe(false);
    expect(bypass(['127.0.0.1'], 'http://127.0.0.1:9999/')).toBe(true);
    expect(bypass(['*'], 'https://github.com/')).toBe(true);
    expect(bypass([], 'https://github.com/')).toBe(false);
  });

  it('splits comma-separated entries as NO_PROXY does', () => {
    expect(bypass(['a.example, b.example'], 'https://b.example/')).toBe(true);
  });
});

describe('normaliseProxyUrl', () => {
  it('adds http:// to a bare host:port and keeps credentials', () => {
    expect(normaliseProxyUrl('proxy.corp:3128')).toBe('http://proxy.corp:3128');
    expect(normaliseProxyUrl('http://u:p@proxy.corp:3128')).toBe('http://u:p@proxy.corp:3128');
  });
});
