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

/**
 * The labels upstream's experimental chart puts on the runner pod template (its common labels, as this
 * chart stamps them on its own objects): the experimental shape always renders them.
 */
function runnerPodLabels(scaleSet: string): Record<string, string> {
  return {
    'actions.github.com/scale-set-name': scaleSet,
    'actions.github.com/scale-set-namespace': BASE.namespace,
    'app.kubernetes.io/instance': scaleSet,
    'app.kubernetes.io/managed-by': 'Helm',
    'app.kubernetes.io/name': scaleSet,
    'app.kubernetes.io/part-of': 'gha-rs',
    'app.kubernetes.io/version': '0.14.2',
    'helm.sh/chart': 'aro-scale-set-0.1.0',
  };
}

const DEFAULT_RUNNER = {
  name: 'runner',
  image: 'ghcr.io/actions/actions-runner:latest',
  command: ['/home/runner/run.sh'],
};

/** The objects of upstream's `resource` not named in the resource test otherwise: each gets a label. */
const EVERY_OTHER_OBJECT = [
  'managerRoleBinding',
  'noPermissionServiceAccount',
  'kubernetesModeRole',
  'kubernetesModeRoleBinding',
  'kubernetesModeServiceAccount',
  'listenerServiceAccount',
  'listenerRole',
  'listenerRoleBinding',
  'listenerConfigSecret',
  'ephemeralRunnerSet',
];

async function refusal(setJson: Record<string, unknown>): Promise<string> {
  const result = await helm(
    templateArgs(CHARTS.scaleSet, {
      ...BASE,
      setJson: {
        scaleset: { name: 'linux' },
        auth: { url: 'https://github.com/octo-org', githubToken: 'ghp_x' },
        controllerServiceAccount: CONTROLLER_SA,
        ...setJson,
      },
    }),
  );
  expect(result.code).not.toBe(0);
  return result.stderr;
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
        template: { metadata: { labels: runnerPodLabels('linux-x64') } },
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
        template: { metadata: { labels: runnerPodLabels(BASE.release) } },
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

  it('appends runner.pod to the runner pod as upstream does: metadata, spec fields, containers, initContainers, volumes', async () => {
    const sidecar = {
      name: 'log-shipper',
      image: 'fluent/fluent-bit:3',
      resources: { limits: { cpu: '100m' } },
    };
    const preInit = { name: 'extra-init-1', image: 'busybox:1.36', command: ['sh', '-c'], args: ['echo'] };
    const cache = { name: 'cache', emptyDir: { medium: 'Memory' } };
    const tolerations = [{ key: 'dedicated', operator: 'Equal', value: 'ci', effect: 'NoSchedule' }];
    const pod = {
      metadata: {
        labels: {
          purpose: 'ci',
          'actions.github.com/scale-set-name': 'should-not-override',
          'actions.github.com/extra': 'reserved',
        },
        annotations: { 'pod-annotation': '2', 'actions.github.com/some-annotation': 'should-not-appear' },
      },
      spec: {
        nodeSelector: { disktype: 'ssd' },
        tolerations,
        priorityClassName: 'runner-high',
        terminationGracePeriodSeconds: 42,
        // The chart's, as upstream: ignored.
        serviceAccountName: 'not-this-one',
        containers: [sidecar],
        initContainers: [preInit],
        volumes: [cache],
      },
    };
    const experimental = await objects({
      setJson: {
        scaleset: { name: 'linux' },
        auth: { url: 'https://github.com/octo-org', githubToken: 'ghp_x' },
        runner: { pod },
        controllerServiceAccount: CONTROLLER_SA,
      },
    });
    const classic = await objects({
      setJson: {
        runnerScaleSetName: 'linux',
        githubConfigUrl: 'https://github.com/octo-org',
        githubConfigSecret: { github_token: 'ghp_x' },
        template: {
          metadata: {
            labels: { ...runnerPodLabels('linux'), purpose: 'ci' },
            annotations: { 'pod-annotation': '2' },
          },
          spec: {
            nodeSelector: { disktype: 'ssd' },
            tolerations,
            priorityClassName: 'runner-high',
            terminationGracePeriodSeconds: 42,
            containers: [DEFAULT_RUNNER, sidecar],
            initContainers: [preInit],
            volumes: [cache],
          },
        },
        controllerServiceAccount: CONTROLLER_SA,
      },
    });
    expect(experimental).toEqual(classic);
    const { template } = experimental.find((m) => m.kind === 'AutoscalingRunnerSet')?.spec as {
      template: {
        metadata: { labels: Record<string, string>; annotations: Record<string, string> };
        spec: { serviceAccountName: string; containers: { name: string }[] };
      };
    };
    expect(template.metadata.labels['actions.github.com/scale-set-name']).toBe('linux');
    expect(template.metadata.annotations['actions.github.com/some-annotation']).toBeUndefined();
    expect(template.spec.serviceAccountName).toBe('linux-gha-rs-no-permission');
    expect(template.spec.containers.map((c) => c.name)).toEqual(['runner', 'log-shipper']);
  });

  it('in dind mode puts runner.pod initContainers between the externals copy and Docker, and takes runner.container image and runner.env', async () => {
    const experimental = await objects({
      setJson: {
        scaleset: { name: 'linux' },
        auth: { url: 'https://github.com/octo-org', githubToken: 'ghp_x' },
        runner: {
          mode: 'dind',
          container: { image: 'ghcr.io/octo-org/runner:2', command: ['/home/runner/run.sh'] },
          env: [{ name: 'FOO', value: 'bar' }],
          pod: {
            spec: {
              initContainers: [{ name: 'pre', image: 'busybox' }],
              volumes: [{ name: 'x', emptyDir: {} }],
            },
          },
        },
        controllerServiceAccount: CONTROLLER_SA,
      },
    });
    const spec = experimental.find((m) => m.kind === 'AutoscalingRunnerSet')?.spec as {
      template: {
        spec: {
          initContainers: { name: string; image: string }[];
          containers: { name: string; image: string; env: { name: string }[] }[];
          volumes: { name: string }[];
        };
      };
    };
    const pod = spec.template.spec;
    expect(pod.initContainers.map((c) => c.name)).toEqual(['init-dind-externals', 'pre', 'dind']);
    expect(pod.initContainers[0].image).toBe('ghcr.io/octo-org/runner:2');
    const runner = pod.containers.find((c) => c.name === 'runner')!;
    expect(runner.image).toBe('ghcr.io/octo-org/runner:2');
    expect(runner.env.map((e) => e.name)).toEqual([
      'FOO',
      'DOCKER_HOST',
      'RUNNER_WAIT_FOR_DOCKER_IN_SECONDS',
    ]);
    expect(pod.volumes.map((v) => v.name).sort()).toEqual(['dind-externals', 'dind-sock', 'work', 'x']);
  });

  it('takes a whole runner.container without a mode (image, command, env, resources), as upstream', async () => {
    const container = {
      image: 'ghcr.io/octo-org/runner:2',
      command: ['/home/runner/run.sh', '--once'],
      env: [{ name: 'FOO', value: 'bar' }],
      resources: { limits: { cpu: '2' } },
    };
    const experimental = await objects({
      setJson: {
        scaleset: { name: 'linux' },
        auth: { url: 'https://github.com/octo-org', githubToken: 'ghp_x' },
        runner: { container },
        controllerServiceAccount: CONTROLLER_SA,
      },
    });
    const classic = await objects({
      setJson: {
        runnerScaleSetName: 'linux',
        githubConfigUrl: 'https://github.com/octo-org',
        githubConfigSecret: { github_token: 'ghp_x' },
        template: {
          metadata: { labels: runnerPodLabels('linux') },
          spec: { containers: [{ name: 'runner', ...container }] },
        },
        controllerServiceAccount: CONTROLLER_SA,
      },
    });
    expect(experimental).toEqual(classic);
  });

  it('refuses, naming the key, what upstream refuses or ignores, and a runner pod given twice', async () => {
    expect(
      await refusal({ runner: { pod: { spec: { containers: [{ name: 'runner', image: 'x' }] } } } }),
    ).toContain("runner.pod.spec.containers[].name must not be 'runner'");
    expect(await refusal({ runner: { pod: { spec: { initContainers: [{ image: 'x' }] } } } })).toContain(
      'runner.pod.spec.initContainers[].name is required',
    );
    expect(await refusal({ runner: { pod: { spec: { volumes: { name: 'x' } } } } })).toContain(
      'runner.pod.spec.volumes must be a list',
    );
    expect(
      await refusal({ runner: { mode: 'dind', container: { resources: { limits: { cpu: '1' } } } } }),
    ).toContain("runner.container.resources: upstream's experimental chart ignores it with runner.mode dind");
    expect(
      await refusal({
        runner: { pod: { spec: { nodeSelector: { a: 'b' } } } },
        template: { spec: { containers: [{ name: 'runner', image: 'mine' }] } },
      }),
    ).toContain('template: give the runner pod either as');
  });

  it('puts resource.<object>.metadata on the same objects as resourceMeta, and resource.all on every object and the runner pod', async () => {
    const experimental = await objects({
      setJson: {
        scaleset: { name: 'linux' },
        auth: { url: 'https://github.com/octo-org', githubToken: 'ghp_x' },
        resource: {
          all: {
            metadata: {
              labels: { team: 'ci', 'actions.github.com/reserved': 'dropped' },
              annotations: { owner: 'platform' },
            },
          },
          autoscalingRunnerSet: { metadata: { annotations: { 'argocd.argoproj.io/sync-wave': '1' } } },
          managerRole: { metadata: { labels: { tier: 'rbac' }, annotations: {} } },
          autoscalingListener: { metadata: { labels: { 'actions.github.com/kept-on-spec': 'yes' } } },
          ephemeralRunner: { metadata: { annotations: { 'cost-center': '42' } } },
          ephemeralRunnerConfigSecret: { metadata: { labels: {}, annotations: {} } },
          ...Object.fromEntries(
            EVERY_OTHER_OBJECT.map((key) => [key, { metadata: { labels: { object: key } } }]),
          ),
        },
        controllerServiceAccount: CONTROLLER_SA,
      },
    });
    const classic = await objects({
      setJson: {
        runnerScaleSetName: 'linux',
        githubConfigUrl: 'https://github.com/octo-org',
        githubConfigSecret: { github_token: 'ghp_x' },
        labels: { team: 'ci' },
        annotations: { owner: 'platform' },
        resourceMeta: {
          autoscalingRunnerSet: { annotations: { 'argocd.argoproj.io/sync-wave': '1' } },
          managerRole: { labels: { tier: 'rbac' } },
          autoscalingListener: { labels: { 'actions.github.com/kept-on-spec': 'yes' } },
          ephemeralRunner: { annotations: { 'cost-center': '42' } },
          ...Object.fromEntries(EVERY_OTHER_OBJECT.map((key) => [key, { labels: { object: key } }])),
        },
        template: {
          metadata: {
            labels: { ...runnerPodLabels('linux'), team: 'ci' },
            annotations: { owner: 'platform' },
          },
        },
        controllerServiceAccount: CONTROLLER_SA,
      },
    });
    expect(experimental).toEqual(classic);
    const role = experimental.find((m) => m.kind === 'Role' && m.metadata.name.endsWith('-manager'));
    expect(role?.metadata.labels).toMatchObject({ team: 'ci', tier: 'rbac' });
    expect(role?.metadata.annotations).toMatchObject({ owner: 'platform' });
  });

  it('refuses a resource key upstream does not have, and extraRules, naming them', async () => {
    expect(await refusal({ resource: { listener: { metadata: { labels: { a: 'b' } } } } })).toContain(
      "resource.listener: not a value of upstream's gha-runner-scale-set-experimental chart",
    );
    expect(
      await refusal({
        resource: {
          kubernetesModeRole: { extraRules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }] },
        },
      }),
    ).toContain('resource.kubernetesModeRole.extraRules: not translated');
  });
});
