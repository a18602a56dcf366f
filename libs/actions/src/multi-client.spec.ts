import { silentLogger } from '@aro/observability';
import { Registry } from 'prom-client';
import { GitHubCredentials } from './auth';
import { ClientForOptions, MultiClient } from './multi-client';

describe('MultiClient', () => {
  let now = 0;
  let multi: MultiClient;
  const pat = (token: string): GitHubCredentials => ({ kind: 'pat', token });
  const base: ClientForOptions = {
    configUrl: 'https://github.com/org',
    namespace: 'ns',
    credentials: pat('a'),
  };

  beforeEach(() => {
    now = 1_000_000;
    multi = new MultiClient({
      logger: silentLogger,
      registry: new Registry(),
      idleTimeoutMs: 60_000,
      now: () => now,
    });
  });

  afterEach(() => multi.close());

  it('returns the same client for the same config URL, namespace, credentials, proxy and CA', () => {
    const a = multi.getClientFor(base);
    const b = multi.getClientFor({ ...base, configUrl: 'https://github.com/org/' });
    expect(b).toBe(a);
    expect(multi.size).toBe(1);
  });

  it.each<[string, Partial<ClientForOptions>]>([
    ['credentials', { credentials: pat('rotated') }],
    ['namespace', { namespace: 'other' }],
    ['config URL', { configUrl: 'https://github.com/org2' }],
    ['proxy', { proxy: { https: 'http://proxy:3128' } }],
    ['root CAs', { rootCAs: ['-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----'] }],
  ])('makes a new client when the %s change', (_what, change) => {
    const a = multi.getClientFor(base);
    const b = multi.getClientFor({ ...base, ...change });
    expect(b).not.toBe(a);
  });

  it('drops a client nobody asked for within the idle timeout, so rotated credentials do not pile up', () => {
    const old = multi.getClientFor(base);
    now += 30_000;
    multi.getClientFor({ ...base, credentials: pat('rotated') });
    now += 40_000;
    const again = multi.getClientFor({ ...base, credentials: pat('rotated') });
    expect(multi.size).toBe(1);
    expect(multi.getClientFor(base)).not.toBe(old);
    expect(multi.getClientFor({ ...base, credentials: pat('rotated') })).toBe(again);
  });

  it('refuses a client without a namespace or with an invalid config URL', () => {
    expect(() => multi.getClientFor({ ...base, namespace: '' })).toThrow(/needs the namespace/);
    expect(() => multi.getClientFor({ ...base, configUrl: 'https://github.com' })).toThrow(
      /invalid config URL/,
    );
  });

  it('refuses an App whose private key is not a PEM key before any request', () => {
    expect(() =>
      multi.getClientFor({
        ...base,
        credentials: { kind: 'app', appId: '1', installationId: 2, privateKey: 'nope' },
      }),
    ).toThrow(/not a valid PEM private key/);
  });
});
