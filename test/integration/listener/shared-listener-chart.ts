import type { V1Container, V1Deployment } from '@kubernetes/client-node';
import { CHARTS, findManifest, render } from '../charts/helm-chart';

const SHARED_RELEASE = 'aro';

/** The chart rendered in shared mode: the shared listener's objects and the controller's env for it. */
export async function sharedListenerChart(namespace: string) {
  const manifests = await render(CHARTS.controller, {
    release: SHARED_RELEASE,
    namespace,
    setJson: { listener: { mode: 'shared' } },
  });
  const manager = (
    findManifest(manifests, 'Deployment', 'aro-gha-rs-controller') as unknown as V1Deployment
  ).spec?.template.spec?.containers.find((c) => c.name === 'manager');
  const env = (name: string): string => manager?.env?.find((e) => e.name === name)?.value ?? '';
  const serviceAccount = env('LISTENER_SHARED_SERVICE_ACCOUNT');
  const deployment = findManifest(manifests, 'Deployment', serviceAccount) as unknown as V1Deployment;
  const container = deployment.spec?.template.spec?.containers.find((c) => c.name === 'listener');
  if (!container) throw new Error('the shared listener Deployment has no listener container');
  const objects = ['ServiceAccount', 'Role', 'RoleBinding'].map((kind) =>
    findManifest(manifests, kind, serviceAccount),
  );
  return {
    objects,
    container: container as V1Container,
    replicas: deployment.spec?.replicas ?? 1,
    controllerEnv: {
      LISTENER_MODE: env('LISTENER_MODE'),
      LISTENER_SHARED_SERVICE_ACCOUNT: serviceAccount,
      LISTENER_SHARED_CONFIG_SECRET: env('LISTENER_SHARED_CONFIG_SECRET'),
    },
  };
}
