import type { V1Deployment, V1EnvVar } from '@kubernetes/client-node';
import { loadControllerConfig } from '../../../apps/controller/src/config';
import {
  CHARTS,
  Manifest,
  RenderOptions,
  findManifest,
  helm,
  helmBinary,
  render,
  templateArgs,
} from './helm-chart';

/*
 * A user switching from upstream's charts, as #22 found them breaking: values given on the command
 * line, upstream's own defaults, the names and labels other tools select by, the version label
 * upstream's controller judges scale sets by, and the values ARO maps rather than takes as they are.
 * Each case is a render; the lookup of one chart's controller by the other is in controller-lookup.test.ts.
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

interface RunnerSetSpec {
  minRunners?: number;
  maxRunners?: number;
  template: { spec: Record<string, unknown> };
}

async function scaleSetSpec(extra: Partial<RenderOptions>): Promise<RunnerSetSpec> {
  const ars = findManifest(await render(CHARTS.scaleSet, { ...SCALE_SET, ...extra }), 'AutoscalingRunnerSet');
  return ars.spec as RunnerSetSpec;
}

async function refusal(chart: string, opts: RenderOptions): Promise<string> {
  const result = await helm(templateArgs(chart, opts));
  expect(result.code).not.toBe(0);
  return result.stderr;
}

/** NOTES.txt as `helm install` prints it (a client-side dry run: no cluster, nothing installed). */
async function installNotes(chart: string, opts: RenderOptions): Promise<string> {
  // `install` has no --kube-version: a client-side dry run takes Helm's own default cluster version.
  const args = templateArgs(chart, opts).filter(
    (arg, i, all) => arg !== '--kube-version' && all[i - 1] !== '--kube-version',
  );
  const result = await helm(['install', ...args.slice(1), '--dry-run=client']);
  expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
  return result.stdout.slice(result.stdout.indexOf('NOTES:'));
}

function deploymentOf(manifests: Manifest[]): V1Deployment {
  return findManifest(manifests, 'Deployment') as unknown as V1Deployment;
}

function managerEnv(manifests: Manifest[]): Record<string, string | undefined> {
  const container = deploymentOf(manifests).spec?.template.spec?.containers.find((c) => c.name === 'manager');
  return Object.fromEntries((container?.env ?? []).map((e: V1EnvVar) => [e.name, e.value]));
}

/** What upstream's controller does with a scale set's version label (v1alpha1.IsVersionAllowed, read). */
function upstreamKeeps(label: string | undefined, build: string): boolean {
  if (label === build) return true;
  const majorMinor = (v: string | undefined) =>
    /^(0|[1-9]\d*)(?:\.(0|[1-9]\d*)(?:\.(?:0|[1-9]\d*))?)?$/.exec(v ?? '');
  const a = majorMinor(label);
  const b = majorMinor(build);
  return !!a && !!b && a[1] === b[1] && (a[2] ?? '0') === (b[2] ?? '0');
}

describe('The charts, as a user of upstream ARC uses them', () => {
  beforeAll(async () => {
    await helmBinary();
  }, 30 * 60_000);

  describe('minRunners and maxRunners', () => {
    it('renders them from --set (integers) as from a values file (floats)', async () => {
      expect(await scaleSetSpec({ set: { minRunners: '1', maxRunners: '10' } })).toMatchObject({
        minRunners: 1,
        maxRunners: 10,
      });
      expect(
        await scaleSetSpec({ setJson: { ...SCALE_SET.setJson, minRunners: 0, maxRunners: 3 } }),
      ).toMatchObject({ minRunners: 0, maxRunners: 3 });
    });

    it('refuses --set minRunners above maxRunners', async () => {
      expect(
        await refusal(CHARTS.scaleSet, { ...SCALE_SET, set: { minRunners: '10', maxRunners: '1' } }),
      ).toContain('maxRunners has to be greater than or equal to minRunners');
    });
  });

  describe("upstream's names and labels, for the same release name", () => {
    it('names the controller <release>-gha-rs-controller and labels it part-of gha-rs-controller', async () => {
      const manifests = await render(CHARTS.controller, CONTROLLER);
      const deployment = deploymentOf(manifests);
      expect(deployment.metadata?.name).toBe('arc-gha-rs-controller');
      expect(findManifest(manifests, 'ServiceAccount').metadata.name).toBe('arc-gha-rs-controller');
      expect(managerEnv(manifests).LEADER_ELECTION_ID).toBe('arc-gha-rs-controller');
      expect(deployment.spec?.selector.matchLabels).toEqual({
        'app.kubernetes.io/name': 'gha-rs-controller',
        'app.kubernetes.io/namespace': 'arc-systems',
        'app.kubernetes.io/instance': 'arc',
      });
      expect(deployment.metadata?.labels).toMatchObject({
        'app.kubernetes.io/part-of': 'gha-rs-controller',
        'app.kubernetes.io/namespace': 'arc-systems',
        'actions.github.com/controller-service-account-name': 'arc-gha-rs-controller',
        'actions.github.com/controller-service-account-namespace': 'arc-systems',
      });
      expect(deployment.spec?.template.metadata?.labels).toMatchObject({
        'app.kubernetes.io/part-of': 'gha-rs-controller',
        ...deployment.spec?.selector.matchLabels,
      });
      // Upstream's one ClusterRole, and ARO's eviction webhook's (get/update of its configuration only).
      expect(manifests.filter((m) => m.kind === 'ClusterRole').map((m) => m.metadata.name)).toEqual([
        'arc-gha-rs-controller',
        'arc-gha-rs-controller-eviction-webhook',
      ]);
    });

    it('names the scale-set objects <scale set>-gha-rs-...', async () => {
      const manifests = await render(CHARTS.scaleSet, SCALE_SET);
      const names = manifests
        .filter((m) => m.kind !== 'AutoscalingRunnerSet')
        .map((m) => `${m.kind}/${m.metadata.name}`);
      expect(names.sort()).toEqual([
        'Role/arc-runner-set-gha-rs-manager',
        'RoleBinding/arc-runner-set-gha-rs-manager',
        'Secret/arc-runner-set-gha-rs-github-secret',
        'ServiceAccount/arc-runner-set-gha-rs-no-permission',
      ]);
      const component = (kind: string) =>
        findManifest(manifests, kind).metadata.labels?.['app.kubernetes.io/component'];
      expect([component('Role'), component('RoleBinding')]).toEqual(['manager-role', 'manager-role-binding']);
    });
  });

  it("stamps scale sets with a version upstream's 0.14 controller keeps, not ARO's own", async () => {
    const ars = findManifest(await render(CHARTS.scaleSet, SCALE_SET), 'AutoscalingRunnerSet');
    const label = ars.metadata.labels?.['app.kubernetes.io/version'];
    expect({
      label,
      kept: upstreamKeeps(label, '0.14.2'),
      keptByPatch: upstreamKeeps(label, '0.14.0'),
    }).toEqual({
      label: expect.any(String),
      kept: true,
      keptByPatch: true,
    });
    // ARO's own version stays on the object, in the chart label; the install says why the label differs.
    expect(ars.metadata.labels?.['helm.sh/chart']).toBe('aro-scale-set-0.1.0');
    expect(await installNotes(CHARTS.scaleSet, SCALE_SET)).toContain(
      `app.kubernetes.io/version ${label} (upstream's release that ARO implements, not ARO's own)`,
    );
  });

  describe("upstream's image", () => {
    it("reads upstream's default repository (no tag) as ARO's image, for the controller and the listener pods", async () => {
      const manifests = await render(CHARTS.controller, {
        ...CONTROLLER,
        set: { 'image.repository': 'ghcr.io/actions/gha-runner-scale-set-controller' },
      });
      const image = deploymentOf(manifests).spec?.template.spec?.containers[0].image;
      expect({ image, listener: managerEnv(manifests).CONTROLLER_MANAGER_CONTAINER_IMAGE }).toEqual({
        image: 'ghcr.io/aro-operator/aro:0.1.0',
        listener: 'ghcr.io/aro-operator/aro:0.1.0',
      });
      expect(
        await installNotes(CHARTS.controller, {
          ...CONTROLLER,
          set: { 'image.repository': 'ghcr.io/actions/gha-runner-scale-set-controller' },
        }),
      ).toContain("image.repository is upstream's default (ghcr.io/actions/gha-runner-scale-set-controller)");
    });

    it('refuses it pinned to a tag, naming image.repository', async () => {
      expect(
        await refusal(CHARTS.controller, {
          ...CONTROLLER,
          set: {
            'image.repository': 'ghcr.io/actions/gha-runner-scale-set-controller',
            'image.tag': '0.14.2',
          },
        }),
      ).toContain(
        'image.repository "ghcr.io/actions/gha-runner-scale-set-controller" (tag "0.14.2") is upstream',
      );
    });
  });

  it("passes imagePullSecrets on to the listener pods (upstream's --auto-scaler-image-pull-secrets)", async () => {
    const manifests = await render(CHARTS.controller, {
      ...CONTROLLER,
      setJson: { imagePullSecrets: [{ name: 'regcred' }, { name: 'mirror' }] },
    });
    expect(deploymentOf(manifests).spec?.template.spec?.imagePullSecrets).toEqual([
      { name: 'regcred' },
      { name: 'mirror' },
    ]);
    expect(managerEnv(manifests).LISTENER_IMAGE_PULL_SECRETS).toBe('regcred,mirror');
  });

  it("takes upstream's numeric flags.logLevel, passing the app the level's name", async () => {
    const levels: Record<string, string | undefined> = {};
    for (const level of ['-2', '-1', '0', '1', '2', '5']) {
      levels[level] = managerEnv(
        await render(CHARTS.controller, { ...CONTROLLER, set: { 'flags.logLevel': level } }),
      ).LOG_LEVEL;
    }
    expect(levels).toEqual({
      '-2': 'debug',
      '-1': 'debug',
      '0': 'info',
      '1': 'warn',
      '2': 'error',
      '5': 'error',
    });
    const quoted = managerEnv(
      await render(CHARTS.controller, { ...CONTROLLER, setJson: { flags: { logLevel: '-1' } } }),
    ).LOG_LEVEL;
    expect(quoted).toBe('debug');
    expect(
      await installNotes(CHARTS.controller, { ...CONTROLLER, set: { 'flags.logLevel': '-2' } }),
    ).toContain("flags.logLevel -2 is upstream's numeric level: ARO logs at debug");
    // Each is a level the app accepts.
    for (const level of Object.values(levels))
      expect(loadControllerConfig({ LOG_LEVEL: level }).LOG_LEVEL).toBe(level);
  });

  it('takes containerMode.type none as upstream does: no mode at all', async () => {
    const none = await scaleSetSpec({ setJson: { ...SCALE_SET.setJson, containerMode: { type: 'none' } } });
    const unset = await scaleSetSpec({});
    expect(none.template).toEqual(unset.template);
  });

  it("gives the controller the app's own defaults for every flag the app has", async () => {
    const env = managerEnv(await render(CHARTS.controller, CONTROLLER));
    const app = loadControllerConfig({}) as Record<string, unknown>;
    const flags = [
      'MAX_CONCURRENT_RECONCILES',
      'UNREGISTRATION_WORKERS',
      'TERMINATED_POD_GRACE_PERIOD_SECONDS',
      'MAX_POD_FAILURES',
      'FAILURE_BACKOFF_BASE_SECONDS',
      'ORPHAN_SWEEP_INTERVAL_SECONDS',
      'ORPHAN_GRACE_SECONDS',
      'LISTENER_CREDENTIAL_REFRESH_SECONDS',
      'EVENTS',
      'LOG_LEVEL',
      'LOG_FORMAT',
      'SHUTDOWN_TIMEOUT_SECONDS',
      'UPDATE_STRATEGY',
      'LEASE_DURATION_SECONDS',
      'RENEW_DEADLINE_SECONDS',
      'RETRY_PERIOD_SECONDS',
      'LISTENER_METRICS_ADDR',
      'LISTENER_METRICS_ENDPOINT',
    ];
    expect(Object.fromEntries(flags.map((f) => [f, env[f]]))).toEqual(
      Object.fromEntries(flags.map((f) => [f, String(app[f])])),
    );
  });
});
