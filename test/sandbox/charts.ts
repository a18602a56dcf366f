import {
  KubeConfig,
  KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  type V1Container,
  type V1Deployment,
  type V1EnvVar,
} from '@kubernetes/client-node';
import { findHelm } from '../harness/helm';
import { CHARTS, Manifest, findManifest, render } from '../integration/charts/helm-chart';

/*
 * The two charts as the sandbox installs them: `helm template` of charts/aro-controller and
 * charts/aro-scale-set, applied by server-side apply (the objects `helm install` would create, without
 * Helm's release bookkeeping). Who their workloads run as: identities.ts.
 */

export const CONTROLLER_NAMESPACE = 'arc-systems';
/** The controller chart's release, as upstream's quickstart names it: Lease and service account arc-gha-rs-controller. */
export const CONTROLLER_RELEASE = 'arc';
export const RUNNER_NAMESPACE = 'arc-runners';
/**
 * The scale-set chart's default release, and so the scale set's name (runnerScaleSetName defaults to
 * it); `--name` gives another, up to the 45 characters the chart allows.
 */
export const SCALE_SET_RELEASE = 'sandbox';

/**
 * The controller chart's values the sandbox sets: shorter leader-election terms than the chart's
 * 15/10/2 s, so that `--chaos` shows a handover within seconds rather than a quarter of the run; and
 * the fleet page on, for a person to look at (`--keep` prints its URL). Everything else is the chart's
 * default.
 */
export const CONTROLLER_VALUES = {
  leaderElection: { leaseDurationSeconds: 8, renewDeadlineSeconds: 5, retryPeriodSeconds: 1 },
  fleetPage: { enabled: true },
};

export interface ScaleSetValues {
  /** The release, and so the AutoscalingRunnerSet's and the scale set's name. */
  release: string;
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
    release: values.release,
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
