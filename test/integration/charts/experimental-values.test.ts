import { CHARTS, Manifest, RenderOptions, helm, render, templateArgs } from './helm-chart';

/*
 * Upstream's experimental scale-set chart's values shape (gha-runner-scale-set-experimental: scaleset,
 * auth, runner, secretResolution, resource), given to aro-scale-set: what maps cleanly renders exactly
 * the objects the equivalent gha-runner-scale-set values render, from a values file and from --set;
 * the refusals (upstream renders it broken, or no clean mapping) are in values/invalid.
 */

const BASE = { release: 'arc-runner-set', namespace: 'arc-runners' } as const;
const CONTROLLER_SA = { namespace: 'arc-systems', name: 'arc-gha-rs-controller' };

/** The objects, without the hash a render stamps from the values themselves (they differ by shape). */
async function objects(opts: Omit<RenderOptions, 'release' | 'namespace'>): Promise<Manifest[]> {
  const manifests = await render(CHARTS.scaleSet, { ...BASE, ...opts });
  for (const m of manifests) delete m.metadata.annotations?.['actions.github.com/values-hash'];
  return manifests;
}

describe('aro-scale-set given upstream experimental chart values', () => {
  it('renders a PAT, name, group, labels, bounds and dind as the classic values do', async () => {
    const experimental = await objects({
      setJson: {
        scaleset: {
          name: 'linux-x64',
          runnerGroup: 'ci',
          labels: ['linux', 'x64'],
          minRunners: 1,
          maxRunners: 5,
        },
        auth: { url: 'https://github.com/octo-org', githubToken: 'ghp_example' },
        secretResolution: { type: 'kubernetes' },
        runner: { mode: 'dind' },
        controllerServiceAccount: CONTROLLER_SA,
      },
    });
    const classic = await objects({
      setJson: {
        runnerScaleSetName: 'linux-x64',
        runnerGroup: 'ci',
        scaleSetLabels: ['linux', 'x64'],
        minRunners: 1,
        maxRunners: 5,
        githubConfigUrl: 'https://github.com/octo-org',
        githubConfigSecret: { github_token: 'ghp_example' },
        containerMode: { type: 'dind' },
        controllerServiceAccount: CONTROLLER_SA,
      },
    });
    expect(experimental).toEqual(classic);
    const ars = experimental.find((m) => m.kind === 'AutoscalingRunnerSet');
    expect(ars?.spec).toMatchObject({ minRunners: 1, maxRunners: 5, runnerScaleSetName: 'linux-x64' });
  });

  it('takes bounds given with --set (integers) and an existing Secret by name', async () => {
    const experimental = await objects({
      set: {
        'scaleset.minRunners': '1',
        'scaleset.maxRunners': '3',
        'auth.url': 'https://github.com/octo-org',
        'auth.secretName': 'pre-defined-secret',
        'controllerServiceAccount.namespace': CONTROLLER_SA.namespace,
        'controllerServiceAccount.name': CONTROLLER_SA.name,
      },
    });
    const ars = experimental.find((m) => m.kind === 'AutoscalingRunnerSet');
    expect(ars?.spec).toMatchObject({
      minRunners: 1,
      maxRunners: 3,
      githubConfigSecret: 'pre-defined-secret',
      githubConfigUrl: 'https://github.com/octo-org',
    });
    expect(experimental.some((m) => m.kind === 'Secret')).toBe(false);
  });

  it('renders a GitHub App and kubernetes mode with its work volume claim as the classic values do', async () => {
    const claim = {
      accessModes: ['ReadWriteOnce'],
      storageClassName: 'standard',
      resources: { requests: { storage: '1Gi' } },
    };
    const experimental = await objects({
      setJson: {
        auth: {
          url: 'https://github.com/octo-org',
          app: {
            clientId: 'Iv1.abc',
            installationId: 654321,
            privateKey: '-----BEGIN RSA PRIVATE KEY-----\nx\n-----END RSA PRIVATE KEY-----',
          },
        },
        runner: { mode: 'kubernetes', kubernetesMode: { workVolumeClaim: claim } },
        controllerServiceAccount: CONTROLLER_SA,
      },
    });
    const classic = await objects({
      setJson: {
        githubConfigUrl: 'https://github.com/octo-org',
        githubConfigSecret: {
          github_app_id: 'Iv1.abc',
          github_app_installation_id: '654321',
          github_app_private_key: '-----BEGIN RSA PRIVATE KEY-----\nx\n-----END RSA PRIVATE KEY-----',
        },
        containerMode: { type: 'kubernetes', kubernetesModeWorkVolumeClaim: claim },
        controllerServiceAccount: CONTROLLER_SA,
      },
    });
    expect(experimental).toEqual(classic);
  });

  it('refuses inline credentials next to auth.secretName, naming the key', async () => {
    const result = await helm(
      templateArgs(CHARTS.scaleSet, {
        ...BASE,
        setJson: {
          auth: { url: 'https://github.com/octo-org', secretName: 's', githubToken: 'ghp_x' },
          controllerServiceAccount: CONTROLLER_SA,
        },
      }),
    );
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('auth.secretName: give either');
  });
});
