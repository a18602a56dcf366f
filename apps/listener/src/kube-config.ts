import { inClusterKubeConfig, loadKubeConfigSource, type KubeConfigSource } from '@aro/kube/lean';

/**
 * In the pod: the ServiceAccount's token (in-cluster). Elsewhere (tests, the sandbox): KUBECONFIG, or
 * ~/.kube/config. Read by libs/kube's lean loader, so the process never loads `@kubernetes/client-node`
 * (alone ~50 MiB of RSS) for what is a server, a CA and a token; only a kubeconfig the lean loader
 * cannot read (YAML, an exec plugin) loads it, at that moment.
 */
export async function loadListenerKubeConfig(
  env: NodeJS.ProcessEnv = process.env,
): Promise<KubeConfigSource> {
  if (env.KUBECONFIG) return loadKubeConfigSource(env.KUBECONFIG);
  if (env.KUBERNETES_SERVICE_HOST) {
    const inCluster = inClusterKubeConfig(env);
    if (inCluster) return inCluster;
  }
  return loadKubeConfigSource();
}
