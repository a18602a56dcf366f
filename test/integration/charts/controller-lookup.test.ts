import { AppsV1Api, loadAllYaml, type V1Deployment } from '@kubernetes/client-node';
import { controlPlaneInfo, createTestNamespace, testKubeConfig } from '../../harness';
import { CHARTS, Manifest, findManifest, helm, helmBinary, render, templateArgs } from './helm-chart';

/*
 * Each scale-set chart finds its controller by looking up Deployments in the cluster (Helm's `lookup`,
 * at install time). A user switching in either direction keeps the scale-set chart they have for a
 * while, so ARO's scale-set chart must find upstream's controller and upstream's must find ARO's.
 *
 * - ARO's chart is rendered with `helm template --dry-run=server` against the test apiserver, which
 *   holds a Deployment labelled as upstream's controller chart labels it (its deployment.yaml and
 *   _helpers.tpl, read): the manager RoleBinding must name that controller's service account.
 * - Upstream's chart is not in this repository; its lookup (gha-runner-scale-set's _helpers.tpl, read)
 *   is: every Deployment of the cluster with `app.kubernetes.io/part-of: gha-rs-controller`, split by
 *   `actions.github.com/controller-watch-single-namespace`, the service account from
 *   `actions.github.com/controller-service-account-name`/`-namespace`. `upstreamLookup` is that rule,
 *   run on the apiserver's Deployments after ARO's controller Deployment is applied there.
 *
 * Each controller here watches only its test's runner namespace, so a cluster-wide controller of
 * another suite could not be mistaken for it (both charts prefer the one watching the namespace).
 */

const apps = () => testKubeConfig().makeApiClient(AppsV1Api);

/** Upstream gha-runner-scale-set's controller lookup for a scale set in `namespace`. */
async function upstreamLookup(namespace: string): Promise<{ name?: string; namespace?: string }> {
  const deployments = (await apps().listDeploymentForAllNamespaces()).items;
  const controllers = deployments.filter(
    (d) => d.metadata?.labels?.['app.kubernetes.io/part-of'] === 'gha-rs-controller',
  );
  const single = controllers.filter(
    (d) => d.metadata?.labels?.['actions.github.com/controller-watch-single-namespace'] === namespace,
  );
  if (single.length !== 1)
    throw new Error(`upstream's lookup finds ${single.length} controllers watching ${namespace}`);
  const labels = single[0].metadata?.labels ?? {};
  return {
    name: labels['actions.github.com/controller-service-account-name'],
    namespace: labels['actions.github.com/controller-service-account-namespace'],
  };
}

/** A Deployment as upstream's gha-runner-scale-set-controller 0.14.2 chart renders it (metadata and selector). */
function upstreamControllerDeployment(release: string, namespace: string, watched: string): V1Deployment {
  const selector = {
    'app.kubernetes.io/name': 'gha-rs-controller',
    'app.kubernetes.io/namespace': namespace,
    'app.kubernetes.io/instance': release,
  };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: `${release}-gha-rs-controller`,
      namespace,
      labels: {
        'helm.sh/chart': 'gha-rs-controller-0.14.2',
        ...selector,
        'app.kubernetes.io/version': '0.14.2',
        'app.kubernetes.io/part-of': 'gha-rs-controller',
        'app.kubernetes.io/managed-by': 'Helm',
        'actions.github.com/controller-service-account-namespace': namespace,
        'actions.github.com/controller-service-account-name': `${release}-gha-rs-controller`,
        'actions.github.com/controller-watch-single-namespace': watched,
      },
    },
    spec: {
      replicas: 0,
      selector: { matchLabels: selector },
      template: {
        metadata: { labels: { ...selector, 'app.kubernetes.io/part-of': 'gha-rs-controller' } },
        spec: {
          containers: [{ name: 'manager', image: 'ghcr.io/actions/gha-runner-scale-set-controller:0.14.2' }],
        },
      },
    },
  };
}

function managerRoleBindingSubject(manifests: Manifest[]): unknown {
  const binding = findManifest(manifests, 'RoleBinding') as Manifest & { subjects: unknown[] };
  return binding.subjects;
}

describe("Each scale-set chart finds the other's controller", () => {
  beforeAll(async () => {
    await helmBinary();
  }, 30 * 60_000);

  it("ARO's aro-scale-set binds its manager Role to upstream's controller", async () => {
    const controllerNamespace = await createTestNamespace('upstream-system');
    const runnerNamespace = await createTestNamespace('runners');
    await apps().createNamespacedDeployment({
      namespace: controllerNamespace,
      body: upstreamControllerDeployment('arc', controllerNamespace, runnerNamespace),
    });
    const opts = {
      release: 'arc-runner-set',
      namespace: runnerNamespace,
      setJson: {
        githubConfigUrl: 'https://github.com/octo-org',
        githubConfigSecret: { github_token: 'ghp_x' },
      },
    };
    const result = await helm([
      ...templateArgs(CHARTS.scaleSet, opts),
      '--dry-run=server',
      '--kubeconfig',
      controlPlaneInfo().kubeconfigPath,
    ]);
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    const manifests = (loadAllYaml(result.stdout) as Array<Manifest | null>).filter(
      (m): m is Manifest => !!m,
    );
    expect(managerRoleBindingSubject(manifests)).toEqual([
      { kind: 'ServiceAccount', name: 'arc-gha-rs-controller', namespace: controllerNamespace },
    ]);
  });

  it("upstream's gha-runner-scale-set finds ARO's controller", async () => {
    const controllerNamespace = await createTestNamespace('arc-systems');
    const runnerNamespace = await createTestNamespace('runners');
    const deployment = findManifest(
      await render(CHARTS.controller, {
        release: 'arc',
        namespace: controllerNamespace,
        setJson: { flags: { watchSingleNamespace: runnerNamespace } },
      }),
      'Deployment',
    ) as unknown as V1Deployment;
    await apps().createNamespacedDeployment({
      namespace: controllerNamespace,
      // No kubelet here: the object is what the lookup reads, its pods would never run.
      body: { ...deployment, spec: deployment.spec && { ...deployment.spec, replicas: 0 } },
    });
    expect(await upstreamLookup(runnerNamespace)).toEqual({
      name: 'arc-gha-rs-controller',
      namespace: controllerNamespace,
    });
  });
});
