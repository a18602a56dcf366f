import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from './kube-client';
import { KubeConfigError, checkKubeConfig } from './kubeconfig-check';

function kubeConfig(cluster: { server: string; skipTLSVerify?: boolean; caFile?: string }): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromClusterAndUser({ name: 'c', skipTLSVerify: false, ...cluster }, { name: 'u' });
  return kc;
}

describe('checkKubeConfig', () => {
  it('refuses a plain http:// server without insecure-skip-tls-verify, saying what to change', () => {
    const kc = kubeConfig({ server: 'http://127.0.0.1:6443' });
    expect(() => checkKubeConfig(kc)).toThrow(KubeConfigError);
    expect(() => checkKubeConfig(kc)).toThrow(
      /cluster "c".*http:\/\/127\.0\.0\.1:6443 is plain HTTP: use the API server's https:\/\/ address, or set insecure-skip-tls-verify: true/,
    );
  });

  it('fails when the client is built, not at the first request', () => {
    expect(() => new KubeClient(kubeConfig({ server: 'http://127.0.0.1:6443' }))).toThrow(/plain HTTP/);
  });

  it('accepts https, and http when insecure-skip-tls-verify says it is meant', () => {
    expect(() => checkKubeConfig(kubeConfig({ server: 'https://127.0.0.1:6443' }))).not.toThrow();
    expect(() =>
      checkKubeConfig(kubeConfig({ server: 'http://127.0.0.1:8001', skipTLSVerify: true })),
    ).not.toThrow();
  });

  it('refuses a server that is not a URL, another scheme, and an unreadable CA file', () => {
    expect(() => checkKubeConfig(kubeConfig({ server: '127.0.0.1:6443' }))).toThrow(/scheme|absolute URL/);
    expect(() => checkKubeConfig(kubeConfig({ server: 'not a url' }))).toThrow(/not an absolute URL/);
    expect(() => checkKubeConfig(kubeConfig({ server: 'ftp://h' }))).toThrow(/scheme ftp: use https/);
    expect(() => checkKubeConfig(kubeConfig({ server: 'https://h', caFile: '/nonexistent/ca.crt' }))).toThrow(
      /certificate-authority \/nonexistent\/ca.crt cannot be read/,
    );
  });

  it('refuses a current context that does not exist, naming the ones that do', () => {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: 'https://h', skipTLSVerify: false }],
      users: [{ name: 'u' }],
      contexts: [{ name: 'real', cluster: 'c', user: 'u' }],
      currentContext: 'typo',
    });
    expect(() => checkKubeConfig(kc)).toThrow(
      /context "typo" does not exist: set current-context .*\(real\)/,
    );
  });
});
