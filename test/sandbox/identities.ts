import { writeFileSync } from 'node:fs';
import {
  AuthenticationV1Api,
  AuthorizationV1Api,
  CoreV1Api,
  KubeConfig,
  type V1ServiceAccount,
} from '@kubernetes/client-node';

/*
 * Who the sandbox's processes run as. There is no kubelet, so nobody mounts a service account token
 * into a pod; the sandbox asks the apiserver for one (TokenRequest, as the kubelet does for a projected
 * token) and writes it into a kubeconfig file the process gets. The apiserver then sees the account
 * itself (`system:serviceaccount:<ns>:<name>`, in the service-account groups), so the process holds
 * exactly the rights the charts' bindings give it.
 *
 * A token rather than a client certificate whose CN is that user name: X.509 caps a CN at 64
 * characters, and a listener's account for a scale set named as the chart allows (45 characters, e.g.
 * upstream's quickstart `arc-runner-set`) is `system:serviceaccount:arc-systems:<name>-<hash>-listener`,
 * well over it. The token is asked for as long as the control plane's certificates live (7 days), so
 * `--keep` runs as long as one likes; it is bound to the account's UID, so an account deleted and made
 * again under the same name needs a token of its own (the listener player's cache is by UID).
 */

/** As long as the test PKI's certificates (test/harness/pki.ts): the control plane never outlives them. */
const TOKEN_SECONDS = 7 * 24 * 3_600;

export function serviceAccountUser(namespace: string, name: string): string {
  return `system:serviceaccount:${namespace}:${name}`;
}

/**
 * A kubeconfig file for service account `namespace/name` (which must exist), written to `path` (0600):
 * what the process of a pod running as that account uses instead of the mounted token. `admin` is the
 * kubeconfig that asks for the token and whose cluster the file names.
 */
export async function writeServiceAccountKubeconfig(
  admin: KubeConfig,
  namespace: string,
  name: string,
  path: string,
): Promise<string> {
  const request = await admin.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
    name,
    namespace,
    body: { spec: { audiences: [], expirationSeconds: TOKEN_SECONDS } },
  });
  const token = request.status?.token;
  if (!token) throw new Error(`the apiserver issued no token for service account ${namespace}/${name}`);
  const cluster = admin.getCurrentCluster();
  if (!cluster) throw new Error('the admin kubeconfig names no cluster');
  const user = serviceAccountUser(namespace, name);
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: user, token }],
    contexts: [{ name: user, cluster: cluster.name, user }],
    currentContext: user,
  });
  writeFileSync(path, kc.exportConfig(), { mode: 0o600 });
  return path;
}

/** The account's UID, which a token is bound to; undefined while it does not exist. */
export async function serviceAccountUid(
  admin: KubeConfig,
  namespace: string,
  name: string,
): Promise<string | undefined> {
  try {
    const account: V1ServiceAccount = await admin
      .makeApiClient(CoreV1Api)
      .readNamespacedServiceAccount({ name, namespace });
    return account.metadata?.uid;
  } catch {
    return undefined;
  }
}

export interface AccountIdentity {
  /** The user the apiserver sees (SelfSubjectReview, `kubectl auth whoami`). */
  user: string;
  /** Whether it may create namespaces: the admin may, a chart's service account may not. */
  mayCreateNamespaces: boolean;
}

/** Who a kubeconfig file authenticates as, asked of the apiserver itself. */
export async function identityOf(kubeconfigPath: string): Promise<AccountIdentity> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  const review = await kc.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
  });
  const access = await kc.makeApiClient(AuthorizationV1Api).createSelfSubjectAccessReview({
    body: {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SelfSubjectAccessReview',
      spec: { resourceAttributes: { verb: 'create', resource: 'namespaces' } },
    },
  });
  return {
    user: review.status?.userInfo?.username ?? '',
    mayCreateNamespaces: access.status?.allowed === true,
  };
}
