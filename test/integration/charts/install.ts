import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  CoreV1Api,
  KubeConfig,
  KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  V1Deployment,
} from '@kubernetes/client-node';
import {
  AutoscalingListenerKind,
  AutoscalingRunnerSetKind,
  EphemeralRunnerKind,
  EphemeralRunnerSetKind,
} from '@aro/api';
import { KubeClient, type KubeObject } from '@aro/kube';
import { controlPlaneInfo, createTestNamespace, testKubeConfig } from '../../harness';
import { CHARTS, Manifest, findManifest, render } from './helm-chart';
import { writeTokenKubeconfig } from './chart-process';

/*
 * Installs the two charts as a user would (aro-controller in its namespace, aro-scale-set in a runner
 * namespace bound to the controller's service account), by server-side apply of `helm template`'s
 * output: the same objects `helm install` would create, without Helm's release bookkeeping. The CRDs
 * are the control plane's own (the render test checks that crds/ matches them).
 */

export interface InstalledCharts {
  release: string;
  controllerNamespace: string;
  runnerNamespace: string;
  controller: Manifest[];
  scaleSet: Manifest[];
  deployment: V1Deployment;
  serviceAccountName: string;
  /** A kubeconfig holding a token of the chart's service account (TokenRequest). */
  kubeconfigPath: string;
  /** Removes what outlives the namespaces (cluster-scoped RBAC) and the cleanup-protection finalizers. */
  uninstall(): Promise<void>;
}

export interface InstallOptions {
  /** `--set-json` values of the controller chart (a function: values naming the test's runner namespace). */
  controllerValues?:
    Record<string, unknown> | ((namespaces: { runnerNamespace: string }) => Record<string, unknown>);
  scaleSetValues?: Record<string, unknown>;
  /** Changes the rendered controller objects before they are applied (to take a right away). */
  editController?: (manifests: Manifest[]) => void;
  /** Changes the rendered scale-set objects before they are applied (to take a right away). */
  editScaleSet?: (manifests: Manifest[]) => void;
  /**
   * Apply both charts as an installer holding every right in the two namespaces and none outside them
   * (a ServiceAccount with a Role in each), as a team without cluster rights would: any cluster-scoped
   * object in a render fails the install with Forbidden.
   */
  namespacedInstaller?: boolean;
}

async function apply(manifests: Manifest[], installer: KubeConfig = testKubeConfig()): Promise<void> {
  const api = KubernetesObjectApi.makeApiClient(installer);
  for (const manifest of manifests) {
    await api.patch(
      manifest as KubernetesObject,
      undefined,
      undefined,
      'aro-chart-test',
      true,
      PatchStrategy.ServerSideApply,
    );
  }
}

export async function installCharts(
  opts: InstallOptions & { configUrl: string; githubToken: string },
): Promise<InstalledCharts> {
  const release = `aro-${randomBytes(3).toString('hex')}`;
  const controllerNamespace = await createTestNamespace('aro-system');
  const runnerNamespace = await createTestNamespace('runners');
  const controller = await render(CHARTS.controller, {
    release,
    namespace: controllerNamespace,
    setJson:
      typeof opts.controllerValues === 'function'
        ? opts.controllerValues({ runnerNamespace })
        : opts.controllerValues,
  });
  opts.editController?.(controller);
  // The controller's Deployment (its `manager` container), not listener.mode shared's listener Deployment.
  const deployment = (controller.find(
    (m) =>
      m.kind === 'Deployment' &&
      (m as unknown as V1Deployment).spec?.template.spec?.containers.some((c) => c.name === 'manager'),
  ) ?? findManifest(controller, 'Deployment')) as unknown as V1Deployment;
  const serviceAccountName = deployment.spec?.template.spec?.serviceAccountName ?? '';
  const scaleSet = await render(CHARTS.scaleSet, {
    release: 'arc-runners',
    namespace: runnerNamespace,
    setJson: {
      githubConfigUrl: opts.configUrl,
      githubConfigSecret: { github_token: opts.githubToken },
      controllerServiceAccount: { namespace: controllerNamespace, name: serviceAccountName },
      ...opts.scaleSetValues,
    },
  });
  opts.editScaleSet?.(scaleSet);
  const installer = opts.namespacedInstaller
    ? await namespacedInstaller(controllerNamespace, [controllerNamespace, runnerNamespace])
    : undefined;
  // The Deployment itself has no kubelet to run it: the test starts its container as a process.
  await apply(
    controller.filter((m) => m.kind !== 'Deployment'),
    installer?.kubeConfig,
  );
  await apply(scaleSet, installer?.kubeConfig);

  const core = testKubeConfig().makeApiClient(CoreV1Api);
  const tokenRequest = await core.createNamespacedServiceAccountToken({
    name: serviceAccountName,
    namespace: controllerNamespace,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const info = controlPlaneInfo();
  const kubeconfigPath = writeTokenKubeconfig(
    info.server,
    info.servingCaCertPath,
    tokenRequest.status?.token ?? '',
  );

  return {
    release,
    controllerNamespace,
    runnerNamespace,
    controller,
    scaleSet,
    deployment,
    serviceAccountName,
    kubeconfigPath,
    uninstall: async () => {
      rmSync(dirname(kubeconfigPath), { recursive: true, force: true });
      if (installer) rmSync(dirname(installer.path), { recursive: true, force: true });
      const api = KubernetesObjectApi.makeApiClient(testKubeConfig());
      for (const m of [...controller, ...scaleSet]) {
        const ref = {
          apiVersion: m.apiVersion,
          kind: m.kind,
          metadata: { name: m.metadata.name, namespace: m.metadata.namespace },
        };
        if (m.metadata.finalizers?.length) {
          await api
            .patch(
              { ...ref, metadata: { ...ref.metadata, finalizers: null } } as unknown as KubernetesObject,
              undefined,
              undefined,
              undefined,
              undefined,
              PatchStrategy.MergePatch,
            )
            .catch(() => undefined);
        }
        if (!m.metadata.namespace) await api.delete(ref).catch(() => undefined);
      }
      // What the controller made (sets, runners, listeners) keeps its finalizers once the controller is
      // stopped; left in place, the next test's cluster-wide controller would reconcile it under a
      // release whose Roles are gone. Release and delete it, as an uninstall with a live controller would.
      const kube = new KubeClient(testKubeConfig());
      for (const namespace of [runnerNamespace, controllerNamespace]) {
        for (const kind of [
          AutoscalingRunnerSetKind,
          EphemeralRunnerSetKind,
          EphemeralRunnerKind,
          AutoscalingListenerKind,
        ]) {
          const objects = await kube.list<KubeObject>(kind, { namespace }).catch(() => [] as KubeObject[]);
          for (const o of objects) {
            const name = o.metadata?.name ?? '';
            await kube
              .mergePatch(kind, namespace, name, { metadata: { finalizers: null } })
              .catch(() => undefined);
            await kube.delete(kind, namespace, name).catch(() => undefined);
          }
        }
      }
      // Its keep-alive connections would hold jest open on the shared control plane.
      kube.close();
    },
  };
}

/**
 * ServiceAccount `installer` of `home`, with a Role granting everything in each of `namespaces` (no
 * ClusterRole, no ClusterRoleBinding): a namespace-scoped installer, as the admin of a team would be.
 */
async function namespacedInstaller(
  home: string,
  namespaces: string[],
): Promise<{ kubeConfig: KubeConfig; path: string }> {
  const name = 'installer';
  const objects: Manifest[] = [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: home } },
  ];
  for (const namespace of namespaces) {
    objects.push(
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name, namespace },
        rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name, namespace },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
        subjects: [{ kind: 'ServiceAccount', name, namespace: home }],
      },
    );
  }
  await apply(objects);
  const path = await serviceAccountKubeconfig(home, name);
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(path);
  return { kubeConfig, path };
}

/**
 * A kubeconfig file holding a token of ServiceAccount `namespace/name` (TokenRequest), as the kubelet
 * would mount into a pod running as it: the apiserver sees that account's user name and groups, so its
 * RoleBindings, and nothing else, apply. (A client certificate cannot stand in: the user name
 * `system:serviceaccount:<namespace>:<name>` of a controller-made account is often longer than the 64
 * characters a certificate's CN holds.)
 */
export async function serviceAccountKubeconfig(namespace: string, name: string): Promise<string> {
  const core = testKubeConfig().makeApiClient(CoreV1Api);
  const tokenRequest = await core.createNamespacedServiceAccountToken({
    name,
    namespace,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const info = controlPlaneInfo();
  return writeTokenKubeconfig(info.server, info.servingCaCertPath, tokenRequest.status?.token ?? '');
}
