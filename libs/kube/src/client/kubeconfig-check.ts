import { accessSync, constants } from 'node:fs';
import type { KubeConfigSource } from './kubeconfig';

/** A kubeconfig the client cannot use; the message says what to change. */
export class KubeConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KubeConfigError';
  }
}

function readable(path: string): boolean {
  try {
    accessSync(path, constants.R_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Refuses, before the first request, a kubeconfig the client cannot use. Found at the first request
 * instead, every list and watch would fail and be retried until the manager gave up on the cache
 * sync two minutes later with "caches did not sync", which says nothing of the cause.
 *
 * A plain `http://` server is refused unless the cluster entry sets `insecure-skip-tls-verify: true`:
 * an API server serves HTTPS, so an `http://` address is nearly always a typo that would send bearer
 * tokens in clear to whatever answers; setting the flag says the plain-HTTP endpoint (a `kubectl
 * proxy`, a test server) is meant.
 */
export function checkKubeConfig(kubeConfig: KubeConfigSource): void {
  const contextName = kubeConfig.getCurrentContext();
  const where = `kubeconfig context "${contextName || '(none)'}"`;
  const context = contextName ? kubeConfig.getContextObject(contextName) : null;
  if (!context) {
    throw new KubeConfigError(
      `${where} does not exist: set current-context to one of the contexts the kubeconfig defines` +
        ` (${
          kubeConfig
            .getContexts()
            .map((c) => c.name)
            .join(', ') || 'none'
        }), or point KUBECONFIG at another file`,
    );
  }
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) {
    throw new KubeConfigError(
      `${where} names cluster "${context.cluster}", which the kubeconfig does not define`,
    );
  }
  const clusterWhere = `kubeconfig cluster "${cluster.name}" (context "${contextName}")`;
  if (!cluster.server) {
    throw new KubeConfigError(`${clusterWhere} has no server: set it to the API server's https:// address`);
  }
  let server: URL;
  try {
    server = new URL(cluster.server);
  } catch {
    throw new KubeConfigError(
      `${clusterWhere} server ${JSON.stringify(cluster.server)} is not an absolute URL: write it as https://<host>:<port>`,
    );
  }
  if (server.protocol === 'http:' && !cluster.skipTLSVerify) {
    throw new KubeConfigError(
      `${clusterWhere} server ${cluster.server} is plain HTTP: use the API server's https:// address, ` +
        'or set insecure-skip-tls-verify: true on the cluster if a plain-HTTP endpoint (kubectl proxy) is meant',
    );
  }
  if (server.protocol !== 'http:' && server.protocol !== 'https:') {
    throw new KubeConfigError(
      `${clusterWhere} server ${cluster.server} has scheme ${server.protocol.replace(/:$/, '')}: use https://`,
    );
  }
  if (cluster.caFile && !readable(cluster.caFile)) {
    throw new KubeConfigError(
      `${clusterWhere} certificate-authority ${cluster.caFile} cannot be read: fix the path or use certificate-authority-data`,
    );
  }
  const user = kubeConfig.getCurrentUser();
  const userWhere = `kubeconfig user "${user?.name ?? context.user}" (context "${contextName}")`;
  for (const [field, path] of [
    ['client-certificate', user?.certFile],
    ['client-key', user?.keyFile],
  ] as const) {
    if (path && !readable(path)) {
      throw new KubeConfigError(
        `${userWhere} ${field} ${path} cannot be read: fix the path or use ${field}-data`,
      );
    }
  }
}
