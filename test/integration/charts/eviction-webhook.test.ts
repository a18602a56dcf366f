import { X509Certificate } from 'node:crypto';
import { request } from 'node:https';
import type { V1Deployment, V1Secret, V1Service } from '@kubernetes/client-node';
import type { KubeApi } from '@aro/kube';
import { createLogger } from '@aro/observability';
import {
  type AdmissionReview,
  EVICTION_WEBHOOK_PATH,
  EvictionAdmission,
  EvictionWebhookServer,
} from '@aro/controllers';
import { CHARTS, type Manifest, findManifest, helmBinary, render } from './helm-chart';

interface WebhookConfiguration extends Manifest {
  webhooks: Array<{
    failurePolicy: string;
    sideEffects: string;
    timeoutSeconds: number;
    rules: Array<{ resources: string[]; operations: string[] }>;
    namespaceSelector: object;
    clientConfig: {
      caBundle: string;
      service: { name: string; namespace: string; path: string; port: number };
    };
  }>;
}

const RELEASE = 'aro';
const NAMESPACE = 'aro-system';

/**
 * The aro-controller chart's eviction webhook (templates/eviction-webhook.yaml) as rendered: the parts
 * agree with each other and with the controller (path, port, certificate folder), and the certificate
 * Helm makes is one the API server accepts for the Service's name, proved by a TLS handshake with the
 * controller's own webhook server.
 */
describe('The aro-controller chart’s eviction webhook', () => {
  beforeAll(async () => {
    await helmBinary();
  }, 30 * 60_000);

  const renderWith = (set: Record<string, string>) =>
    render(CHARTS.controller, { release: RELEASE, namespace: NAMESPACE, set });

  it('is off by default, and off with the eviction protection', async () => {
    const cases: Array<Record<string, string>> = [
      {},
      { 'evictionWebhook.enabled': 'true', 'flags.busyRunnerEvictionProtection': 'false' },
    ];
    for (const set of cases) {
      const manifests = await renderWith(set);
      expect(manifests.filter((m) => m.kind === 'ValidatingWebhookConfiguration')).toEqual([]);
      const deployment = findManifest(manifests, 'Deployment') as unknown as V1Deployment;
      const env = deployment.spec?.template.spec?.containers[0].env?.map((e) => e.name);
      expect(env).not.toContain('EVICTION_WEBHOOK_PORT');
    }
  });

  it('renders a webhook the API server can call: Service, certificate and configuration agree with the controller', async () => {
    const manifests = await renderWith({ 'evictionWebhook.enabled': 'true' });
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
    const mount = container.volumeMounts?.find((m) => m.mountPath === env.EVICTION_WEBHOOK_CERT_DIR);
    const volume = pod.volumes?.find((v) => v.name === mount?.name);

    const secret = findManifest(manifests, 'Secret', volume?.secret?.secretName) as unknown as V1Secret;
    const pem = (key: string) => Buffer.from(secret.data?.[key] ?? '', 'base64').toString('utf8');
    expect(webhook.clientConfig.caBundle).toBe(secret.data?.['ca.crt']);

    // The controller's server with the rendered pair; a client that trusts only the caBundle and
    // checks the name the API server dials (<service>.<namespace>.svc), as the API server does.
    const admission = new EvictionAdmission({
      client: {} as KubeApi,
      actions: { getActionsClient: () => Promise.reject(new Error('not called')) },
      logger: createLogger({ level: 'silent' }),
    });
    const server = new EvictionWebhookServer(
      admission,
      {
        port: 0,
        bindAddress: '127.0.0.1',
        tls: { cert: pem('tls.crt'), key: pem('tls.key') },
        reviewTimeoutMs: 1_000,
      },
      createLogger({ level: 'silent' }),
    );
    await server.start();
    try {
      const review: AdmissionReview = {
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: {
          uid: 'u-1',
          resource: { group: '', version: 'v1', resource: 'pods' },
          subResource: 'status',
        },
      };
      const answer = await new Promise<AdmissionReview>((resolve, reject) => {
        const req = request(
          {
            host: '127.0.0.1',
            port: server.port(),
            path: target.path,
            method: 'POST',
            ca: pem('ca.crt'),
            servername: `${target.name}.${target.namespace}.svc`,
            headers: { 'content-type': 'application/json' },
          },
          (res) => {
            let body = '';
            res.on('data', (c: Buffer) => (body += c.toString()));
            res.on('end', () => resolve(JSON.parse(body) as AdmissionReview));
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify(review));
      });
      expect(answer.response).toEqual({ uid: 'u-1', allowed: true });
    } finally {
      await server.stop();
    }
    const cert = new X509Certificate(pem('tls.crt'));
    expect(cert.subjectAltName).toContain(`DNS:${target.name}.${target.namespace}.svc`);
  });

  it('narrows to the watched namespace with flags.watchSingleNamespace', async () => {
    const manifests = await renderWith({
      'evictionWebhook.enabled': 'true',
      'flags.watchSingleNamespace': 'arc-runners',
    });
    const configuration = findManifest(manifests, 'ValidatingWebhookConfiguration') as WebhookConfiguration;
    expect(configuration.webhooks[0].namespaceSelector).toEqual({
      matchLabels: { 'kubernetes.io/metadata.name': 'arc-runners' },
    });
  });
});
