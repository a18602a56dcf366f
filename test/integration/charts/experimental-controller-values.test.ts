import { join } from 'node:path';
import { CHARTS, Manifest, helm, render, templateArgs } from './helm-chart';

/*
 * Upstream's experimental controller chart's values shape (gha-runner-scale-set-controller-experimental:
 * everything under `controller`), given to aro-controller: what maps onto this chart's values renders
 * exactly the objects the same settings in gha-runner-scale-set-controller's shape render; what ARO
 * cannot honour is refused, naming the key.
 */

const BASE = { release: 'arc', namespace: 'arc-systems' } as const;
const UPSTREAM_DEFAULTS = join(__dirname, 'values', 'upstream-experimental', 'controller-defaults.yaml');

const controllerObjects = (opts: { setJson?: Record<string, unknown>; valuesFiles?: string[] }) =>
  render(CHARTS.controller, { ...BASE, ...opts });

async function refusal(controller: Record<string, unknown>): Promise<string> {
  const result = await helm(templateArgs(CHARTS.controller, { ...BASE, setJson: { controller } }));
  expect(result.code).not.toBe(0);
  return result.stderr;
}

const deploymentOf = (objects: Manifest[]) => objects.find((m) => m.kind === 'Deployment');

describe('aro-controller given upstream experimental controller chart values', () => {
  it("installs upstream's experimental defaults as the same settings in the classic shape do", async () => {
    const experimental = await controllerObjects({ valuesFiles: [UPSTREAM_DEFAULTS] });
    const classic = await controllerObjects({
      setJson: {
        replicaCount: 1,
        flags: { logLevel: 'debug', logFormat: 'text', runnerMaxConcurrentReconciles: 2 },
        image: { repository: 'ghcr.io/actions/gha-runner-scale-set-controller' },
        topologySpreadConstraints: [],
      },
    });
    expect(experimental).toEqual(classic);
    // Upstream's image is not run: ARO's own, as for the classic chart's default.
    const manager = (
      deploymentOf(experimental)?.spec as {
        template: { spec: { containers: { name: string; image: string }[] } };
      }
    ).template.spec.containers.find((c) => c.name === 'manager');
    expect(manager?.image).toMatch(/^ghcr\.io\/aro-operator\/aro:/);
  });

  it('translates every key that maps, as the classic keys render', async () => {
    const volume = { name: 'akv-cert', secret: { secretName: 'akv-cert' } };
    const mount = { name: 'akv-cert', mountPath: '/akv', readOnly: true };
    const tolerations = [{ key: 'dedicated', operator: 'Equal', value: 'infra', effect: 'NoSchedule' }];
    const spread = [
      { maxSkew: 2, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'DoNotSchedule' },
    ];
    const env = [{ name: 'AZURE_AUTHORITY_HOST', value: 'https://login.microsoftonline.us' }];
    const experimental = await controllerObjects({
      setJson: {
        imagePullSecrets: [{ name: 'regcred' }],
        controller: {
          replicaCount: 3,
          manager: {
            config: {
              logLevel: 'warn',
              logFormat: 'json',
              watchSingleNamespace: 'arc-runners',
              runnerMaxConcurrentReconciles: 4,
              excludeLabelPropagationPrefixes: ['argocd.argoproj.io/'],
              k8sClientRateLimiterQPS: 50,
              k8sClientRateLimiterBurst: 100,
              rateLimiter: { name: 'typed_rate_limiter' },
              healthProbeBindAddress: ':8081',
            },
            container: {
              image: 'registry.corp:5000/mirror/aro:1.2.3',
              pullPolicy: 'Always',
              env,
              securityContext: { runAsUser: 2000 },
              resources: { limits: { memory: '1Gi' } },
            },
          },
          serviceAccount: {
            create: true,
            name: 'arc-controller',
            annotations: { 'eks.amazonaws.com/role-arn': 'r' },
          },
          pod: {
            metadata: {
              labels: { team: 'ci', 'actions.github.com/reserved': 'dropped' },
              annotations: { 'prometheus.io/scrape': 'true' },
            },
            spec: {
              securityContext: { fsGroup: 3000 },
              priorityClassName: 'system-cluster-critical',
              nodeSelector: { pool: 'infra' },
              tolerations,
              affinity: { nodeAffinity: {} },
              topologySpreadConstraints: spread,
              volumes: [volume],
            },
            volumeMounts: [mount],
          },
          metrics: { controllerManagerAddr: ':9090', listenerAddr: ':9091', listenerEndpoint: '/m' },
        },
      },
    });
    const classic = await controllerObjects({
      setJson: {
        imagePullSecrets: [{ name: 'regcred' }],
        replicaCount: 3,
        flags: {
          logLevel: 'warn',
          logFormat: 'json',
          watchSingleNamespace: 'arc-runners',
          runnerMaxConcurrentReconciles: 4,
          excludeLabelPropagationPrefixes: ['argocd.argoproj.io/'],
          k8sClientRateLimiterQPS: 50,
          k8sClientRateLimiterBurst: 100,
          rateLimiter: { name: 'typed_rate_limiter' },
          healthProbeBindAddress: ':8081',
        },
        image: { repository: 'registry.corp:5000/mirror/aro', tag: '1.2.3', pullPolicy: 'Always' },
        env,
        securityContext: { runAsUser: 2000 },
        resources: { limits: { memory: '1Gi' } },
        serviceAccount: {
          create: true,
          name: 'arc-controller',
          annotations: { 'eks.amazonaws.com/role-arn': 'r' },
        },
        podLabels: { team: 'ci' },
        podAnnotations: { 'prometheus.io/scrape': 'true' },
        podSecurityContext: { fsGroup: 3000 },
        priorityClassName: 'system-cluster-critical',
        nodeSelector: { pool: 'infra' },
        tolerations,
        affinity: { nodeAffinity: {} },
        topologySpreadConstraints: spread,
        volumes: [volume],
        volumeMounts: [mount],
        metrics: { controllerManagerAddr: ':9090', listenerAddr: ':9091', listenerEndpoint: '/m' },
      },
    });
    expect(experimental).toEqual(classic);
    const pod = (
      deploymentOf(experimental)?.spec as { template: { metadata: { labels: Record<string, string> } } }
    ).template;
    expect(pod.metadata.labels.team).toBe('ci');
    expect(pod.metadata.labels['actions.github.com/reserved']).toBeUndefined();
  });

  it('takes an existing service account (create: false) before any template reads it', async () => {
    const experimental = await controllerObjects({
      setJson: { controller: { serviceAccount: { create: false, name: 'platform-arc' } } },
    });
    expect(experimental.some((m) => m.kind === 'ServiceAccount')).toBe(false);
    const spec = deploymentOf(experimental)?.spec as { template: { spec: { serviceAccountName: string } } };
    expect(spec.template.spec.serviceAccountName).toBe('platform-arc');
  });

  it('refuses, naming the key, what ARO cannot honour', async () => {
    expect(await refusal({ manager: { container: { extraArgs: ['--foo'] } } })).toContain(
      'controller.manager.container.extraArgs (arguments of upstream',
    );
    expect(await refusal({ pod: { spec: { containers: [{ name: 'proxy', image: 'envoy' }] } } })).toContain(
      'controller.pod.spec.containers',
    );
    expect(await refusal({ pod: { spec: { terminationGracePeriodSeconds: 60 } } })).toContain(
      'controller.pod.spec.terminationGracePeriodSeconds (ARO sets flags.shutdownTimeoutSeconds + 15 s',
    );
    expect(await refusal({ pod: { spec: { hostNetwork: true } } })).toContain(
      'controller.pod.spec.hostNetwork',
    );
    expect(await refusal({ metadata: { labels: { a: 'b' } } })).toContain('controller.metadata');
    expect(await refusal({ manager: { config: { logFormat: 'logfmt' } } })).toContain(
      'controller.manager.config.logFormat: logfmt is not json or text',
    );
    expect(
      await refusal({
        manager: { container: { image: 'ghcr.io/actions/gha-runner-scale-set-controller:0.14.2' } },
      }),
    ).toContain(
      'controller.manager.container.image "ghcr.io/actions/gha-runner-scale-set-controller:0.14.2" is upstream\'s Go controller image',
    );
    expect(await refusal({ replicas: 2 })).toContain(
      "controller.replicas: not a value of upstream's gha-runner-scale-set-controller-experimental chart",
    );
  });
});
