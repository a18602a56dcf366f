import type { V1Deployment, V1Service } from '@kubernetes/client-node';
import type { KubeApi } from '@aro/kube';
import { createLogger } from '@aro/observability';
import { EVICTION_WEBHOOK_PATH, WebhookCertificate } from '@aro/controllers';
import { CHARTS, type Manifest, findManifest, helm, helmBinary, render } from './helm-chart';

interface WebhookConfiguration extends Manifest {
  webhooks: Array<{
    failurePolicy: string;
    sideEffects: string;
    timeoutSeconds: number;
    rules: Array<{ resources: string[]; operations: string[] }>;
    namespaceSelector: object;
    clientConfig: {
      caBundle?: string;
      service: { name: string; namespace: string; path: string; port: number };
    };
  }>;
}

const RELEASE = 'aro';
const NAMESPACE = 'aro-system';

/**
 * The aro-controller chart's eviction webhook (templates/eviction-webhook.yaml) as rendered: on by
 * default, no certificate material (the controller makes it: the apiserver's TLS call with it is proved
 * in test/integration/ephemeral-runner/eviction-webhook.test.ts), and the parts agree with each other
 * and with the controller (path, port, names, the one right on the configuration).
 */
describe('The aro-controller chart’s eviction webhook', () => {
  beforeAll(async () => {
    await helmBinary();
  }, 30 * 60_000);

  const renderWith = (set: Record<string, string>) =>
    render(CHARTS.controller, { release: RELEASE, namespace: NAMESPACE, set });

  it('is on by default, off with evictionWebhook.enabled=false or without the eviction protection', async () => {
    const defaults = await renderWith({});
    expect(defaults.filter((m) => m.kind === 'ValidatingWebhookConfiguration')).toHaveLength(1);
    const cases: Array<Record<string, string>> = [
      { 'evictionWebhook.enabled': 'false' },
      { 'flags.busyRunnerEvictionProtection': 'false' },
    ];
    for (const set of cases) {
      const manifests = await renderWith(set);
      expect(manifests.filter((m) => m.kind === 'ValidatingWebhookConfiguration')).toEqual([]);
      expect(manifests.filter((m) => m.metadata.name.endsWith('-eviction-webhook'))).toEqual([]);
      const deployment = findManifest(manifests, 'Deployment') as unknown as V1Deployment;
      const env = deployment.spec?.template.spec?.containers[0].env?.map((e) => e.name);
      expect(env).not.toContain('EVICTION_WEBHOOK_PORT');
    }
  });

  it('renders no certificate: two renders are the same, and no Secret, caBundle or key is in them', async () => {
    const first = await helm(['template', RELEASE, CHARTS.controller, '--namespace', NAMESPACE]);
    const second = await helm(['template', RELEASE, CHARTS.controller, '--namespace', NAMESPACE]);
    expect(first.code).toBe(0);
    expect(second.stdout).toBe(first.stdout);
    // No caBundle field, and no PEM, plain or base64 (`LS0tLS1CRUdJTi` is `-----BEGIN`).
    expect(first.stdout).not.toMatch(/caBundle:|BEGIN CERTIFICATE|PRIVATE KEY|LS0tLS1CRUdJTi/);
    const manifests = await renderWith({});
    expect(manifests.filter((m) => m.kind === 'Secret')).toEqual([]);
  });

  it('renders a webhook the API server can call: Service, configuration, rights and controller agree', async () => {
    const manifests = await renderWith({});
    const configuration = findManifest(manifests, 'ValidatingWebhookConfiguration') as WebhookConfiguration;
    const [webhook] = configuration.webhooks;
    expect(webhook.failurePolicy).toBe('Ignore');
    expect(webhook.sideEffects).toBe('NoneOnDryRun');
    expect(webhook.rules).toEqual([
      expect.objectContaining({ resources: ['pods/eviction'], operations: ['CREATE'] }),
    ]);
    expect(webhook.namespaceSelector).toEqual({
      matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system'] }],
    });
    // The controller sets it; a rendered one would be replaced on every upgrade.
    expect(webhook.clientConfig.caBundle).toBeUndefined();
    const { service: target } = webhook.clientConfig;
    expect(target.path).toBe(EVICTION_WEBHOOK_PATH);

    const service = findManifest(manifests, 'Service', target.name) as unknown as V1Service;
    const servicePort = service.spec?.ports?.find((p) => p.port === target.port);
    const deployment = findManifest(manifests, 'Deployment') as unknown as V1Deployment;
    const pod = deployment.spec!.template.spec!;
    const container = pod.containers[0];
    const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value]));
    const containerPort = container.ports?.find((p) => p.name === servicePort?.targetPort);
    expect(Number(env.EVICTION_WEBHOOK_PORT)).toBe(containerPort?.containerPort);
    expect(Number(env.EVICTION_WEBHOOK_TIMEOUT_SECONDS)).toBe(webhook.timeoutSeconds);
    expect(env.EVICTION_WEBHOOK_CONFIGURATION).toBe(configuration.metadata.name);
    expect(env.EVICTION_WEBHOOK_SERVICE).toBe(target.name);
    expect(env.EVICTION_WEBHOOK_CERT_SECRET).toBeTruthy();
    expect(Number(env.EVICTION_WEBHOOK_CERT_VALIDITY_DAYS)).toBe(365);
    expect(container.volumeMounts?.map((m) => m.mountPath)).toEqual(['/tmp']);

    // The certificate the controller makes names what the API server dials: <service>.<namespace>.svc.
    const certificate = new WebhookCertificate(
      {} as KubeApi,
      {
        namespace: NAMESPACE,
        secretName: env.EVICTION_WEBHOOK_CERT_SECRET ?? '',
        serviceName: env.EVICTION_WEBHOOK_SERVICE ?? '',
        configurationName: env.EVICTION_WEBHOOK_CONFIGURATION ?? '',
        validityDays: 365,
      },
      createLogger({ level: 'silent' }),
    );
    expect(certificate.hosts[0]).toBe(`${target.name}.${target.namespace}.svc`);

    // Its one cluster-wide right: get and update of this configuration, by name.
    const binding = manifests.find(
      (m) => m.kind === 'ClusterRoleBinding' && m.metadata.name === configuration.metadata.name,
    ) as Manifest & { roleRef: { name: string }; subjects: Array<{ name: string; namespace: string }> };
    expect(binding.subjects).toEqual([
      expect.objectContaining({ name: pod.serviceAccountName, namespace: NAMESPACE }),
    ]);
    const role = findManifest(manifests, 'ClusterRole', binding.roleRef.name) as Manifest & {
      rules: Array<{ apiGroups: string[]; resources: string[]; resourceNames?: string[]; verbs: string[] }>;
    };
    expect(role.rules).toEqual([
      {
        apiGroups: ['admissionregistration.k8s.io'],
        resources: ['validatingwebhookconfigurations'],
        resourceNames: [configuration.metadata.name],
        verbs: ['get', 'update'],
      },
    ]);
  });

  it('narrows to the watched namespace with flags.watchSingleNamespace, where it is on only when asked for', async () => {
    // auto (the default) is off there: the configuration and its ClusterRole are cluster-scoped
    // (upstream-layout.test.ts checks the whole render).
    const auto = await renderWith({ 'flags.watchSingleNamespace': 'arc-runners' });
    expect(auto.filter((m) => m.metadata.name.endsWith('-eviction-webhook'))).toEqual([]);
    const manifests = await renderWith({
      'flags.watchSingleNamespace': 'arc-runners',
      'evictionWebhook.enabled': 'true',
    });
    const configuration = findManifest(manifests, 'ValidatingWebhookConfiguration') as WebhookConfiguration;
    expect(configuration.webhooks[0].namespaceSelector).toEqual({
      matchLabels: { 'kubernetes.io/metadata.name': 'arc-runners' },
    });
  });
});
