import { writeFileSync } from 'node:fs';
import {
  AuthenticationV1Api,
  AuthorizationV1Api,
  KubeConfig,
  KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  type V1Container,
  type V1Deployment,
  type V1EnvVar,
} from '@kubernetes/client-node';
import { findHelm } from '../harness/helm';
import { kubeConfigForUser } from '../harness/users';
import { CHARTS, Manifest, findManifest, render } from '../integration/charts/helm-chart';

/*
 * The two charts as the sandbox installs them: `helm template` of charts/aro-controller and
 * charts/aro-scale-set, applied by server-side apply (the objects `helm install` would create, without
 * Helm's release bookkeeping), and the identities their workloads run as.
 *
 * There is no kubelet, so nobody mounts a service account token into a pod. The sandbox stands in for
 * it with a client certificate whose user is the service account's (`system:serviceaccount:<ns>:<name>`,
 * in the service-account groups): RBAC matches a ServiceAccount subject by that user name, so the
 * process gets exactly the rights the chart's bindings give the account. A certificate rather than a
 * TokenRequest token because a token expires within the hour and `--keep` runs for as long as one likes.
 */

export const CONTROLLER_NAMESPACE = 'arc-systems';
/** The controller chart's release, as upstream's quickstart names it: Lease and service account arc-gha-rs-controller. */
export const CONTROLLER_RELEASE = 'arc';
export const RUNNER_NAMESPACE = 'arc-runners';
/** The scale-set chart's release, and so the scale set's name (runnerScaleSetName defaults to it). */
export const SCALE_SET_RELEASE = 'sandbox';

/**
 * The controller chart's values the sandbox sets: shorter leader-election terms than the chart's
 * 15/10/2 s, so that `--chaos` shows a handover within seconds rather than a quarter of the run.
 * Everything else is the chart's default.
 */
export const CONTROLLER_VALUES = {
  leaderElection: { leaseDurationSeconds: 8, renewDeadlineSeconds: 5, retryPeriodSeconds: 1 },
};

export interface ScaleSetValues {
  githubConfigUrl: string;
  githubToken: string;
  minRunners: number;
  maxRunners: number;
  /** The controller chart's service account, which helm template cannot look up in the cluster. */
  controllerServiceAccount: { namespace: string; name: string };
}

export interface ControllerChart {
  manifests: Manifest[];
  deployment: V1Deployment;
  container: V1Container;
  serviceAccountName: string;
  replicas: number;
}

/** helm, built on first use with its progress in `log` (test/harness/helm.ts). */
export async function ensureHelm(log: (line: string) => void): Promise<string> {
  const found = await findHelm(log);
  return `helm ${found.version} (${found.source})`;
}

export async function renderControllerChart(): Promise<ControllerChart> {
  const manifests = await render(CHARTS.controller, {
    release: CONTROLLER_RELEASE,
    namespace: CONTROLLER_NAMESPACE,
    setJson: CONTROLLER_VALUES,
  });
  const deployment = findManifest(manifests, 'Deployment') as unknown as V1Deployment;
  const pod = deployment.spec?.template.spec;
  const container = pod?.containers.find((c) => c.name === 'manager');
  if (!pod?.serviceAccountName || !container) {
    throw new Error('the aro-controller Deployment has no manager container or no serviceAccountName');
  }
  return {
    manifests,
    deployment,
    container,
    serviceAccountName: pod.serviceAccountName,
    replicas: deployment.spec?.replicas ?? 1,
  };
}

/** The scale-set chart with its defaults and only the values the sandbox must give. */
export async function renderScaleSetChart(values: ScaleSetValues): Promise<Manifest[]> {
  return render(CHARTS.scaleSet, {
    release: SCALE_SET_RELEASE,
    namespace: RUNNER_NAMESPACE,
    setJson: {
      githubConfigUrl: values.githubConfigUrl,
      githubConfigSecret: { github_token: values.githubToken },
      minRunners: values.minRunners,
      maxRunners: values.maxRunners,
      controllerServiceAccount: values.controllerServiceAccount,
    },
  });
}

/** Server-side apply, as the admin who installs the charts. */
export async function applyManifests(kubeConfig: KubeConfig, manifests: Manifest[]): Promise<void> {
  const api = KubernetesObjectApi.makeApiClient(kubeConfig);
  for (const manifest of manifests) {
    await api.patch(
      manifest as KubernetesObject,
      undefined,
      undefined,
      'aro-sandbox',
      true,
      PatchStrategy.ServerSideApply,
    );
  }
}

/**
 * `helm uninstall`: deletes every object of the render at once. The chart-made secret, roles and
 * service account carry the cleanup-protection finalizer, so they stay until the controller has
 * released the scale set's runners and lets them go.
 */
export async function deleteManifests(kubeConfig: KubeConfig, manifests: Manifest[]): Promise<void> {
  const api = KubernetesObjectApi.makeApiClient(kubeConfig);
  for (const m of manifests) {
    await api
      .delete({
        apiVersion: m.apiVersion,
        kind: m.kind,
        metadata: { name: m.metadata.name, namespace: m.metadata.namespace },
      })
      .catch(() => undefined); // already gone
  }
}

/** Whether any object of the render is still in the apiserver. */
export async function manifestsLeft(kubeConfig: KubeConfig, manifests: Manifest[]): Promise<string[]> {
  const api = KubernetesObjectApi.makeApiClient(kubeConfig);
  const left: string[] = [];
  for (const m of manifests) {
    const found = await api
      .read({
        apiVersion: m.apiVersion,
        kind: m.kind,
        metadata: { name: m.metadata.name, namespace: m.metadata.namespace ?? '' },
      })
      .then(
        () => true,
        () => false,
      );
    if (found) left.push(`${m.kind}/${m.metadata.name}`);
  }
  return left;
}

export function serviceAccountUser(namespace: string, name: string): string {
  return `system:serviceaccount:${namespace}:${name}`;
}

/**
 * A kubeconfig file for service account `namespace/name`, written to `path` (0600): what the process
 * of a pod running as that account uses instead of the mounted token.
 */
export async function writeServiceAccountKubeconfig(
  namespace: string,
  name: string,
  path: string,
): Promise<string> {
  const kc = await kubeConfigForUser(serviceAccountUser(namespace, name), [
    'system:serviceaccounts',
    `system:serviceaccounts:${namespace}`,
  ]);
  writeFileSync(path, kc.exportConfig(), { mode: 0o600 });
  return path;
}

export interface Identity {
  /** The user the apiserver sees (SelfSubjectReview, `kubectl auth whoami`). */
  user: string;
  /** Whether it may create namespaces: the admin may, a chart's service account may not. */
  mayCreateNamespaces: boolean;
}

/** Who a kubeconfig file authenticates as, asked of the apiserver itself. */
export async function identityOf(kubeconfigPath: string): Promise<Identity> {
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

/**
 * The manager container's environment as the kubelet would give it to pod `podName`: the chart's env
 * with the downward API answered. Refuses a source it cannot stand in for, so a chart change that the
 * sandbox would silently get wrong fails loudly.
 */
export function containerEnv(
  container: V1Container,
  pod: { name: string; namespace: string; serviceAccountName: string },
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const e of container.env ?? ([] as V1EnvVar[])) {
    if (!e.valueFrom) {
      env[e.name] = e.value ?? '';
      continue;
    }
    const downward: Record<string, string> = {
      'metadata.name': pod.name,
      'metadata.namespace': pod.namespace,
      'spec.serviceAccountName': pod.serviceAccountName,
    };
    const field = e.valueFrom.fieldRef?.fieldPath;
    if (!field || downward[field] === undefined) {
      throw new Error(`env ${e.name}: the sandbox cannot stand in for ${JSON.stringify(e.valueFrom)}`);
    }
    env[e.name] = downward[field];
  }
  return env;
}
