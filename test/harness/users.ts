import { KubeConfig } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { controlPlaneInfo } from './context';
import { issueClientCertificatePem } from './pki';

/**
 * A client configuration for a user of the test's choosing, authenticated by a client certificate signed by
 * the apiserver's client CA (CN = user, one O per group). Such a user has no rights until the test grants
 * some with RBAC, which is what makes RBAC testable.
 */
export async function kubeConfigForUser(user: string, groups: readonly string[] = []): Promise<KubeConfig> {
  const info = controlPlaneInfo();
  const { certPem, keyPem } = await issueClientCertificatePem(
    { certPath: info.clientCaCertPath, keyPath: info.clientCaKeyPath },
    user,
    groups,
  );
  const b64 = (text: string): string => Buffer.from(text).toString('base64');
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [
      {
        name: 'envtest',
        server: info.server,
        caData: readFileSync(info.servingCaCertPath).toString('base64'),
      },
    ],
    users: [{ name: user, certData: b64(certPem), keyData: b64(keyPem) }],
    contexts: [{ name: user, cluster: 'envtest', user }],
    currentContext: user,
  });
  return kc;
}
