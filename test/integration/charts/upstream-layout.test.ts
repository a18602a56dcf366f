import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type V1APIResourceList, type V1Deployment, loadAllYaml } from '@kubernetes/client-node';
import { testKubeConfig } from '../../harness';
import { kubeRequest } from '../../harness/rest';
import {
  CHARTS,
  type Manifest,
  type RenderOptions,
  findManifest,
  helm,
  helmBinary,
  render,
  templateArgs,
} from './helm-chart';

/*
 * The charts in upstream's file layout: each template file of upstream's gha-runner-scale-set-controller
 * and gha-runner-scale-set holds, in ARO's chart of the same role, the one object upstream keeps there
 * (kind, name and namespace as upstream names them for the same release), and renders nothing when that
 * object does not apply. Upstream's chart tests and `helm template --show-only templates/<file>` find
 * them where they look. And flags.watchSingleNamespace renders no cluster-scoped object, so that an
 * installer holding only namespaced rights can apply it, unless the user asks for the eviction webhook.
 */

const CONTROLLER = { release: 'arc', namespace: 'arc-systems' } as const;
const SCALE_SET = {
  release: 'arc-runner-set',
  namespace: 'arc-runners',
  setJson: {
    githubConfigUrl: 'https://github.com/octo-org',
    githubConfigSecret: { github_token: 'ghp_example' },
    controllerServiceAccount: { namespace: 'arc-systems', name: 'arc-gha-rs-controller' },
  },
} as const;
const WATCHED = 'team-runners';

interface LayoutCase {
  chart: 'controller' | 'scaleSet';
  /** Upstream's file name under templates/. */
  file: string;
  /** Values under which upstream renders the object (`--set-json`). */
  on: Record<string, unknown>;
  /** Values under which upstream renders nothing from the file; absent when it always renders. */
  off?: Record<string, unknown>;
  kind: string;
  name: string;
  namespace?: string;
}

const single = { flags: { watchSingleNamespace: WATCHED } };
const kubeMode = { containerMode: { type: 'kubernetes-novolume' } };
const dindMode = { containerMode: { type: 'dind' } };
const controllerName = 'arc-gha-rs-controller';
const scaleSetName = 'arc-runner-set-gha-rs';

// Upstream's templates (NOTES.txt and _helpers.tpl aside), as of gha-runner-scale-set-controller and
// gha-runner-scale-set 0.14: every file, the object in it and when it renders.
// prettier-ignore
const LAYOUT: LayoutCase[] = [
  { chart: 'controller', file: 'deployment.yaml', on: {}, kind: 'Deployment', name: controllerName, namespace: 'arc-systems' },
  { chart: 'controller', file: 'serviceaccount.yaml', on: {}, off: { serviceAccount: { create: false, name: 'mine' } }, kind: 'ServiceAccount', name: controllerName, namespace: 'arc-systems' },
  { chart: 'controller', file: 'leader_election_role.yaml', on: { replicaCount: 2 }, off: { replicaCount: 1 }, kind: 'Role', name: `${controllerName}-leader-election`, namespace: 'arc-systems' },
  { chart: 'controller', file: 'leader_election_role_binding.yaml', on: { replicaCount: 2 }, off: { replicaCount: 1 }, kind: 'RoleBinding', name: `${controllerName}-leader-election`, namespace: 'arc-systems' },
  { chart: 'controller', file: 'manager_cluster_role.yaml', on: {}, off: single, kind: 'ClusterRole', name: controllerName },
  { chart: 'controller', file: 'manager_cluster_role_binding.yaml', on: {}, off: single, kind: 'ClusterRoleBinding', name: controllerName },
  { chart: 'controller', file: 'manager_listener_role.yaml', on: {}, kind: 'Role', name: `${controllerName}-listener`, namespace: 'arc-systems' },
  { chart: 'controller', file: 'manager_listener_role_binding.yaml', on: {}, kind: 'RoleBinding', name: `${controllerName}-listener`, namespace: 'arc-systems' },
  { chart: 'controller', file: 'manager_single_namespace_controller_role.yaml', on: single, off: {}, kind: 'Role', name: `${controllerName}-single-namespace`, namespace: 'arc-systems' },
  { chart: 'controller', file: 'manager_single_namespace_controller_role_binding.yaml', on: single, off: {}, kind: 'RoleBinding', name: `${controllerName}-single-namespace`, namespace: 'arc-systems' },
  { chart: 'controller', file: 'manager_single_namespace_watch_role.yaml', on: single, off: {}, kind: 'Role', name: `${controllerName}-single-namespace-watch`, namespace: WATCHED },
  { chart: 'controller', file: 'manager_single_namespace_watch_role_binding.yaml', on: single, off: {}, kind: 'RoleBinding', name: `${controllerName}-single-namespace-watch`, namespace: WATCHED },
  { chart: 'scaleSet', file: 'autoscalingrunnerset.yaml', on: {}, kind: 'AutoscalingRunnerSet', name: 'arc-runner-set', namespace: 'arc-runners' },
  { chart: 'scaleSet', file: 'githubsecret.yaml', on: {}, off: { githubConfigSecret: 'existing-secret' }, kind: 'Secret', name: `${scaleSetName}-github-secret`, namespace: 'arc-runners' },
  { chart: 'scaleSet', file: 'manager_role.yaml', on: {}, kind: 'Role', name: `${scaleSetName}-manager`, namespace: 'arc-runners' },
  { chart: 'scaleSet', file: 'manager_role_binding.yaml', on: {}, kind: 'RoleBinding', name: `${scaleSetName}-manager`, namespace: 'arc-runners' },
  { chart: 'scaleSet', file: 'no_permission_serviceaccount.yaml', on: dindMode, off: kubeMode, kind: 'ServiceAccount', name: `${scaleSetName}-no-permission`, namespace: 'arc-runners' },
  { chart: 'scaleSet', file: 'kube_mode_serviceaccount.yaml', on: kubeMode, off: dindMode, kind: 'ServiceAccount', name: `${scaleSetName}-kube-mode`, namespace: 'arc-runners' },
  { chart: 'scaleSet', file: 'kube_mode_role.yaml', on: kubeMode, off: dindMode, kind: 'Role', name: `${scaleSetName}-kube-mode`, namespace: 'arc-runners' },
  { chart: 'scaleSet', file: 'kube_mode_role_binding.yaml', on: kubeMode, off: dindMode, kind: 'RoleBinding', name: `${scaleSetName}-kube-mode`, namespace: 'arc-runners' },
];

function renderOptions(chart: LayoutCase['chart'], values: Record<string, unknown>): RenderOptions {
  const base: RenderOptions =
    chart === 'controller' ? { ...CONTROLLER } : { ...SCALE_SET, setJson: { ...SCALE_SET.setJson } };
  return { ...base, setJson: { ...base.setJson, ...values } };
}

/** `helm template --show-only templates/<file>`: the objects, or helm's refusal. */
async function showOnly(
  chart: LayoutCase['chart'],
  file: string,
  values: Record<string, unknown>,
): Promise<{ code: number; stderr: string; objects: Manifest[] }> {
  const dir = chart === 'controller' ? CHARTS.controller : CHARTS.scaleSet;
  const args = [...templateArgs(dir, renderOptions(chart, values)), '--show-only', `templates/${file}`];
  const result = await helm(args);
  const objects =
    result.code === 0
      ? (loadAllYaml(result.stdout) as Array<Manifest | null>).filter((m): m is Manifest => m !== null)
      : [];
  return { code: result.code, stderr: result.stderr, objects };
}

/** Whether each `apiVersion` + `kind` is namespaced, as the apiserver's discovery says. */
class Scopes {
  private readonly lists = new Map<string, Promise<V1APIResourceList | undefined>>();

  /**
   * Kinds of CRDs the test apiserver does not serve (the Prometheus Operator's, which the chart renders on
   * request), with the scope their CRDs declare. Any other kind discovery does not know fails the test.
   */
  private static readonly NOT_SERVED: Record<string, boolean> = {
    'monitoring.coreos.com/v1 ServiceMonitor': true,
    'monitoring.coreos.com/v1 PrometheusRule': true,
  };

  async namespaced(apiVersion: string, kind: string): Promise<boolean> {
    const list = await this.list(apiVersion);
    const resource = list?.resources.find((r) => r.kind === kind && !r.name.includes('/'));
    if (resource) return resource.namespaced;
    const known = Scopes.NOT_SERVED[`${apiVersion} ${kind}`];
    if (known === undefined)
      throw new Error(`the apiserver serves no ${apiVersion} ${kind}: its scope is unknown`);
    return known;
  }

  private list(apiVersion: string): Promise<V1APIResourceList | undefined> {
    let list = this.lists.get(apiVersion);
    if (!list) {
      const path = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
      list = kubeRequest(testKubeConfig(), { path }).then((res) =>
        res.status === 200 ? (res.body as V1APIResourceList) : undefined,
      );
      this.lists.set(apiVersion, list);
    }
    return list;
  }
}

describe('The charts in upstream’s file layout', () => {
  beforeAll(async () => {
    await helmBinary();
  }, 30 * 60_000);

  it.each(
    LAYOUT.map(
      (c) =>
        [`${c.chart === 'controller' ? 'aro-controller' : 'aro-scale-set'} templates/${c.file}`, c] as const,
    ),
  )('%s holds upstream’s object, and only it', async (_label, c) => {
    const shown = await showOnly(c.chart, c.file, c.on);
    expect({ code: shown.code, stderr: shown.stderr }).toEqual({ code: 0, stderr: '' });
    expect(
      shown.objects.map((m) => ({ kind: m.kind, name: m.metadata.name, namespace: m.metadata.namespace })),
    ).toEqual([{ kind: c.kind, name: c.name, namespace: c.namespace }]);
  });

  it.each(
    LAYOUT.filter((c) => c.off).map(
      (c) =>
        [`${c.chart === 'controller' ? 'aro-controller' : 'aro-scale-set'} templates/${c.file}`, c] as const,
    ),
  )('%s renders nothing when upstream’s does not', async (_label, c) => {
    const dir = c.chart === 'controller' ? CHARTS.controller : CHARTS.scaleSet;
    // The file is there (helm says the same "could not find" of a missing file and of an empty render).
    expect(existsSync(join(dir, 'templates', c.file))).toBe(true);
    const shown = await showOnly(c.chart, c.file, c.off ?? {});
    expect(shown.objects).toEqual([]);
    expect(shown.stderr).toContain(`could not find template templates/${c.file}`);
  });
});

describe('flags.watchSingleNamespace', () => {
  const scopes = new Scopes();
  // Every optional part on, so that none of them brings a cluster-scoped object in unnoticed.
  const everything = {
    flags: { watchSingleNamespace: WATCHED },
    replicaCount: 3,
    podDisruptionBudget: { maxUnavailable: 1 },
    listener: { mode: 'shared' },
    metrics: { serviceMonitor: { enabled: true } },
    prometheusRule: { enabled: true },
    grafanaDashboard: { enabled: true },
    fleetPage: { enabled: true },
  };

  beforeAll(async () => {
    await helmBinary();
  }, 30 * 60_000);

  /** The rendered objects the apiserver would keep outside any namespace. */
  async function clusterScoped(values: Record<string, unknown>): Promise<string[]> {
    // `helm template` leaves crds/ out, as `helm install --skip-crds` does: the CRDs are the cluster's,
    // installed once by whoever may (docs/helm.md), not part of a namespaced install.
    const manifests = await render(CHARTS.controller, { ...CONTROLLER, setJson: values });
    const found: string[] = [];
    for (const m of manifests) {
      if (!(await scopes.namespaced(m.apiVersion, m.kind))) found.push(`${m.kind}/${m.metadata.name}`);
    }
    return found.sort();
  }

  it('renders no cluster-scoped object, every optional part on', async () => {
    expect(await clusterScoped(everything)).toEqual([]);
    // Also when it comes in upstream's experimental controller values.
    expect(
      await clusterScoped({ controller: { manager: { config: { watchSingleNamespace: WATCHED } } } }),
    ).toEqual([]);
    // The same check finds the cluster-wide install's, so it can fail.
    expect(await clusterScoped({ ...everything, flags: {} })).toEqual([
      `ClusterRole/${controllerName}`,
      `ClusterRole/${controllerName}-eviction-webhook`,
      `ClusterRoleBinding/${controllerName}`,
      `ClusterRoleBinding/${controllerName}-eviction-webhook`,
      `ValidatingWebhookConfiguration/${controllerName}-eviction-webhook`,
    ]);
  });

  it('leaves the eviction webhook off unless evictionWebhook.enabled is true, then renders only what it needs', async () => {
    const env = async (values: Record<string, unknown>) => {
      const deployment = findManifest(
        await render(CHARTS.controller, { ...CONTROLLER, setJson: values }),
        'Deployment',
        controllerName,
      ) as unknown as V1Deployment;
      return (deployment.spec?.template.spec?.containers[0].env ?? []).map((e) => e.name);
    };
    expect(await env(everything)).not.toContain('EVICTION_WEBHOOK_PORT');
    expect(await env({ ...everything, evictionWebhook: { enabled: 'auto' } })).not.toContain(
      'EVICTION_WEBHOOK_PORT',
    );

    const enabled = { ...everything, evictionWebhook: { enabled: true } };
    expect(await clusterScoped(enabled)).toEqual([
      `ClusterRole/${controllerName}-eviction-webhook`,
      `ClusterRoleBinding/${controllerName}-eviction-webhook`,
      `ValidatingWebhookConfiguration/${controllerName}-eviction-webhook`,
    ]);
    expect(await env(enabled)).toContain('EVICTION_WEBHOOK_PORT');
  });

  it('says in NOTES whether the install holds cluster-scoped objects', async () => {
    const notes = async (values: Record<string, unknown>) => {
      // A client-side dry run prints NOTES.txt as `helm install` would; no cluster is touched.
      const args = templateArgs(CHARTS.controller, { ...CONTROLLER, setJson: values }).filter(
        (arg, i, all) => arg !== '--kube-version' && all[i - 1] !== '--kube-version',
      );
      const result = await helm(['install', ...args.slice(1), '--dry-run=client']);
      expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
      return result.stdout.slice(result.stdout.indexOf('NOTES:'));
    };
    expect(await notes(single)).toContain('This install holds no cluster-scoped object');
    const enabled = await notes({ ...single, evictionWebhook: { enabled: true } });
    expect(enabled).toContain(
      `this install holds three cluster-scoped objects, the eviction webhook's ValidatingWebhookConfiguration ${controllerName}-eviction-webhook`,
    );
    expect(await notes({})).not.toContain('cluster-scoped');
  });
});
