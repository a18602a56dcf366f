import { X509Certificate } from 'node:crypto';
import { connect } from 'node:tls';
import { ApiException, CoreV1Api, type V1Pod, type V1Secret, type V1Service } from '@kubernetes/client-node';
import { EphemeralRunnerKind, type ResourceKind } from '@aro/api';
import {
  BUSY_RUNNER_LABEL,
  EVICTION_WEBHOOK_PATH,
  EvictionWebhookLifecycle,
  ValidatingWebhookConfigurationKind,
  WEBHOOK_SECRET_KEYS,
  WebhookCertificate,
  type WebhookCertificateOptions,
  type WebhookConfiguration,
} from '@aro/controllers';
import { KubeClient, SecretKind } from '@aro/kube';
import { createLogger } from '@aro/observability';
import {
  createTestNamespace,
  finishPodDeletion,
  freePort,
  runnerContainerRunning,
  runnerContainerTerminated,
  testKubeConfig,
  waitFor,
} from '../../harness';
import { ControllerFixture, controllerSuite } from './fixture';

/**
 * How long the service's "executing a job" answers a runner's eviction retries here: long enough that a
 * retry at once falls inside it on a loaded machine, short enough to wait out (the product's is 30 s).
 */
const BUSY_ANSWER_STANDS_MS = 10_000;

const ServiceKind: ResourceKind = {
  group: '',
  version: 'v1',
  kind: 'Service',
  plural: 'services',
  namespaced: true,
};

/** The chart's name for the webhook's Secret, Service and configuration (one name for the three). */
const WEBHOOK_NAME = 'aro-gha-rs-controller-eviction-webhook';
const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The eviction admission webhook (libs/controllers/src/eviction-webhook) on the real apiserver, with
 * the certificate the controller makes. The controller app serves it on a loopback port; the
 * configuration is the chart's (a Service reference, failurePolicy Ignore, no caBundle), scoped to the
 * test's namespace. There is no pod network, so the Service is an ExternalName to 127.0.0.1: the
 * apiserver's service resolver dials it as it would a ClusterIP, on the configuration's port, and checks
 * the certificate against `<service>.<namespace>.svc` and the caBundle, exactly as in a cluster. The
 * test drains as `kubectl drain` does, through the Eviction API.
 */
describe('EphemeralRunner eviction webhook', () => {
  const suite = controllerSuite();
  let f: ControllerFixture;
  let admin: KubeClient;
  let configurationName: string | undefined;

  beforeAll(() => {
    admin = new KubeClient(testKubeConfig());
  });
  afterAll(() => {
    admin.close();
  });
  afterEach(async () => {
    if (configurationName) await admin.delete(ValidatingWebhookConfigurationKind, '', configurationName);
    configurationName = undefined;
    suite.sim.onRunnerRemoved = undefined;
  });

  /** The chart's Service (as an ExternalName to loopback) and configuration, without a caBundle. */
  async function installWebhookObjects(namespace: string, port: number): Promise<WebhookCertificateOptions> {
    await admin.create<V1Service>(ServiceKind, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: WEBHOOK_NAME, namespace },
      spec: { type: 'ExternalName', externalName: '127.0.0.1', ports: [{ name: 'webhook', port }] },
    });
    configurationName = `${WEBHOOK_NAME}-${namespace}`;
    await admin.create<WebhookConfiguration>(ValidatingWebhookConfigurationKind, {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: configurationName },
      webhooks: [
        {
          name: 'eviction.runners.actions.github.com',
          admissionReviewVersions: ['v1'],
          sideEffects: 'NoneOnDryRun',
          failurePolicy: 'Ignore',
          timeoutSeconds: 10,
          clientConfig: { service: { name: WEBHOOK_NAME, namespace, path: EVICTION_WEBHOOK_PATH, port } },
          rules: [
            {
              apiGroups: [''],
              apiVersions: ['v1'],
              operations: ['CREATE'],
              resources: ['pods/eviction'],
              scope: 'Namespaced',
            },
          ],
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } },
        },
      ],
    });
    return {
      namespace,
      secretName: WEBHOOK_NAME,
      serviceName: WEBHOOK_NAME,
      configurationName,
      validityDays: 365,
    };
  }

  async function webhookConfiguration(): Promise<WebhookConfiguration> {
    return admin.get<WebhookConfiguration>(ValidatingWebhookConfigurationKind, '', configurationName ?? '');
  }

  function pemOf(secret: V1Secret | undefined, key: string): string {
    return Buffer.from(secret?.data?.[key] ?? '', 'base64').toString('utf8');
  }

  interface EvictionAnswer {
    code: number;
    message: string;
  }

  /** The Eviction API's answer: 201 when the pod was evicted, else the refusal's code and message. */
  async function evict(name: string, dryRun = false): Promise<EvictionAnswer> {
    const api = testKubeConfig().makeApiClient(CoreV1Api);
    try {
      await api.createNamespacedPodEviction({
        name,
        namespace: f.namespace,
        body: {
          apiVersion: 'policy/v1',
          kind: 'Eviction',
          metadata: { name, namespace: f.namespace },
          ...(dryRun ? { deleteOptions: { dryRun: ['All'] } } : {}),
        },
        ...(dryRun ? { dryRun: 'All' } : {}),
      });
      return { code: 201, message: '' };
    } catch (err) {
      if (err instanceof ApiException) {
        const body = (typeof err.body === 'string' ? JSON.parse(err.body) : err.body) as { message?: string };
        return { code: err.code, message: body?.message ?? '' };
      }
      throw err;
    }
  }

  function server() {
    const s = f.app.get(EvictionWebhookLifecycle).server;
    if (!s) throw new Error('the eviction webhook is not enabled in the fixture');
    return s;
  }

  async function idleRunner(name: string): Promise<void> {
    await f.createRunner(name);
    await f.waitForPod(name, (p) => p !== undefined, 'the runner pod');
    await runnerContainerRunning(f.namespace, name);
    await f.waitForRunner(
      name,
      (r) => r?.status?.phase === 'Pending' && !!r.status.runnerId,
      'phase Pending',
    );
  }

  /**
   * The controller with the webhook and the certificate it makes, the chart's objects, and a dry-run
   * eviction of `probePod` until the apiserver calls the webhook (it loads configurations
   * asynchronously): a call that can only succeed over TLS with the caBundle the controller set.
   */
  async function startWithWebhook(probePod: string): Promise<void> {
    const namespace = await createTestNamespace('er');
    const port = await freePort();
    const certificate = await installWebhookObjects(namespace, port);
    f = await suite.start({
      namespace,
      config: {
        evictionProtection: true,
        evictionWebhook: { port, certificate, busyAnswerStandsMs: BUSY_ANSWER_STANDS_MS },
      },
    });
    await idleRunner(probePod);
    await waitFor(
      async () => {
        await evict(probePod, true);
        return server().reviewed > 0;
      },
      { description: 'the apiserver to call the eviction webhook' },
    );
  }

  it('makes its certificate: the Secret, the configuration’s caBundle and the certificate served agree', async () => {
    await startWithWebhook('wh-cert');
    const secret = await f.secret(WEBHOOK_NAME);
    expect(secret?.type).toBe('kubernetes.io/tls');
    const configuration = await webhookConfiguration();
    expect(configuration.webhooks?.[0].clientConfig?.caBundle).toBe(
      secret?.data?.[WEBHOOK_SECRET_KEYS.caBundle],
    );
    // Removed with the configuration when the chart is uninstalled.
    expect(secret?.metadata?.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'ValidatingWebhookConfiguration', uid: configuration.metadata?.uid }),
    ]);
    const cert = new X509Certificate(pemOf(secret, WEBHOOK_SECRET_KEYS.cert));
    expect(cert.subjectAltName).toContain(`DNS:${WEBHOOK_NAME}.${f.namespace}.svc`);
    // What the server presents is the Secret's, verified as the apiserver verifies it.
    const served = await new Promise<string>((resolve, reject) => {
      const socket = connect(
        {
          host: '127.0.0.1',
          port: server().port(),
          servername: `${WEBHOOK_NAME}.${f.namespace}.svc`,
          ca: pemOf(secret, WEBHOOK_SECRET_KEYS.caBundle),
        },
        () => {
          resolve(socket.getPeerX509Certificate()?.fingerprint256 ?? '');
          socket.end();
        },
      );
      socket.on('error', reject);
    });
    expect(served).toBe(cert.fingerprint256);
  });

  it('removes an idle runner’s registration before its pod is evicted, and the runner goes as a whole', async () => {
    await startWithWebhook('wh-idle');
    // What the apiserver held at the moment the service let the registration go, read before the
    // service answers (and so before the webhook can allow the eviction).
    const podAtRemoval: Array<V1Pod | undefined> = [];
    suite.sim.onRunnerRemoved = async (runner) => {
      if (runner.name === 'wh-idle') podAtRemoval.push(await f.pod('wh-idle'));
    };

    suite.sim.resetCallCounts();
    const answer = await evict('wh-idle');
    expect(answer.code).toBe(201);
    // Gone as the Eviction API answered: no waiting for the controller.
    expect(suite.sim.runner('wh-idle')).toBeUndefined();
    expect(podAtRemoval).toHaveLength(1);
    expect(podAtRemoval[0]?.metadata?.uid).toBeDefined();
    expect(podAtRemoval[0]?.metadata?.deletionTimestamp).toBeUndefined();
    // No job can reach it now: the service has no runner of that name.
    expect(() => suite.sim.assignJobToRunner('wh-idle')).toThrow();

    expect((await f.pod('wh-idle'))?.metadata?.deletionTimestamp).toBeDefined();
    await f.waitForRunner(
      'wh-idle',
      (r) => r === undefined || r.metadata?.deletionTimestamp !== undefined,
      'the runner deleted',
    );
    await finishPodDeletion(f.namespace, 'wh-idle');
    await f.waitForRunner('wh-idle', (r) => r === undefined, 'the runner gone');
    // Not registered again for the evicted pod.
    expect(suite.sim.runner('wh-idle')).toBeUndefined();
    expect(suite.sim.callCount('POST runnerscalesets/{id}/generatejitconfig')).toBe(0);
    // The cost of the eviction on the service: the webhook's removal, and the finalizer's (404).
    const removals = suite.sim.callCount('DELETE agents/{id}');
    console.log(
      `Actions service calls for one idle runner evicted through the webhook: ${removals} removal(s)`,
    );
    expect(removals).toBeLessThanOrEqual(2);
  });

  it('leaves runners and their registrations alone on a dry-run eviction (kubectl drain --dry-run=server)', async () => {
    await startWithWebhook('wh-dry-probe');
    await idleRunner('wh-dry-idle');
    await idleRunner('wh-dry-busy');
    const job = suite.sim.startJob('wh-dry-busy', { displayName: 'build' });
    await f.kube.mergePatchStatus(EphemeralRunnerKind, f.namespace, 'wh-dry-busy', {
      status: { jobId: job.jobId },
    });
    await f.waitForRunner('wh-dry-busy', (r) => r?.status?.phase === 'Running', 'phase Running');
    const removals = suite.sim.callCount('DELETE agents/{id}');
    const reviewed = server().reviewed;

    // The idle runner's dry run is admitted, as the real eviction would be, and nothing happens.
    expect(await evict('wh-dry-idle', true)).toEqual({ code: 201, message: '' });
    // The busy runner's is refused, naming its job, without asking the service to let the runner go.
    const busy = await evict('wh-dry-busy', true);
    expect(busy.code).toBe(429);
    expect(busy.message).toContain(`runner ${f.namespace}/wh-dry-busy is executing job ${job.jobId}`);
    // The webhook decided both (the answers are its own, not the apiserver's).
    expect(server().reviewed).toBe(reviewed + 2);

    for (const name of ['wh-dry-idle', 'wh-dry-busy']) {
      const runner = await f.runner(name);
      expect(runner).toBeDefined();
      expect(runner?.metadata?.deletionTimestamp).toBeUndefined();
      expect(suite.sim.runner(name)).toBeDefined();
      const pod = await f.pod(name);
      expect(pod).toBeDefined();
      expect(pod?.metadata?.deletionTimestamp).toBeUndefined();
    }
    expect(suite.sim.callCount('DELETE agents/{id}')).toBe(removals);
    expect(suite.sim.runner('wh-dry-busy')?.jobId).toBe(job.jobId);
    // Still a runner the service can give a job to.
    expect(suite.sim.assignJobToRunner('wh-dry-idle').jobId).toBeDefined();
  });

  it('refuses the eviction of a runner the service gave a job the controller has not heard of yet; the job completes', async () => {
    await startWithWebhook('wh-window');
    // The service assigns a job; the listener has not reported it, so the pod carries no busy label
    // and no budget covers it.
    const job = suite.sim.assignJobToRunner('wh-window');
    expect((await f.pod('wh-window'))?.metadata?.labels?.[BUSY_RUNNER_LABEL]).toBeUndefined();

    for (let attempt = 0; attempt < 2; attempt++) {
      const answer = await evict('wh-window');
      expect(answer.code).toBe(429);
      expect(answer.message).toContain(`runner ${f.namespace}/wh-window`);
      expect(answer.message).toContain('executing a job');
    }
    expect((await f.pod('wh-window'))?.metadata?.deletionTimestamp).toBeUndefined();
    expect(suite.sim.runner('wh-window')?.jobId).toBe(job.jobId);

    // The job runs to its end on the runner it was given.
    suite.sim.startJob('wh-window', job.jobId);
    await f.kube.mergePatchStatus(EphemeralRunnerKind, f.namespace, 'wh-window', {
      status: { jobId: job.jobId },
    });
    suite.sim.completeJob(job.jobId, 'succeeded');
    suite.sim.runnerExited('wh-window', 0);
    await runnerContainerTerminated(f.namespace, 'wh-window', 0, { phase: 'Succeeded' });
    await f.waitForRunner('wh-window', (r) => r === undefined, 'the runner done and deleted');
    expect(suite.sim.job(job.jobId)?.result).toBe('succeeded');
  });

  it('refuses a busy runner’s eviction naming the runner and its job', async () => {
    await startWithWebhook('wh-busy');
    const job = suite.sim.startJob('wh-busy', { displayName: 'build' });
    await f.kube.mergePatchStatus(EphemeralRunnerKind, f.namespace, 'wh-busy', {
      status: { jobId: job.jobId },
    });
    await f.waitForRunner('wh-busy', (r) => r?.status?.phase === 'Running', 'phase Running');
    const answer = await evict('wh-busy');
    expect(answer.code).toBe(429);
    expect(answer.message).toContain(`runner ${f.namespace}/wh-busy is executing job ${job.jobId}`);
    expect(suite.sim.runner('wh-busy')).toBeDefined();
  });

  it('lets a drain take a runner whose job completed while its process still runs: marks lifted, registration removed first', async () => {
    await startWithWebhook('wh-done');
    const job = suite.sim.startJob('wh-done', { displayName: 'build' });
    await f.kube.mergePatchStatus(EphemeralRunnerKind, f.namespace, 'wh-done', {
      status: { jobId: job.jobId },
    });
    await f.waitForPod(
      'wh-done',
      (p) => p?.metadata?.labels?.[BUSY_RUNNER_LABEL] === 'true',
      'the busy label on the pod',
    );
    expect((await evict('wh-done')).code).toBe(429);

    // The service completes the job; the runner process is still finishing (no exit yet), so the
    // controller has not lifted the marks, and without the webhook the budget would refuse.
    suite.sim.completeJob(job.jobId, 'succeeded');
    expect((await f.pod('wh-done'))?.metadata?.labels?.[BUSY_RUNNER_LABEL]).toBe('true');
    // A drain's retry at once is answered from the service's last "executing a job", without asking it
    // (one call per busy pod per window, not per 5 s retry): the registration it would remove is still there.
    const retried = await evict('wh-done');
    expect(retried.code).toBe(429);
    expect(retried.message).toContain(`runner ${f.namespace}/wh-done is executing job ${job.jobId}`);
    expect(suite.sim.runner('wh-done')).toBeDefined();
    // Past the window the next retry asks, and the service lets the runner go.
    const answer = await waitFor(
      async () => {
        const a = await evict('wh-done');
        return a.code === 429 ? undefined : a;
      },
      { description: 'an eviction of wh-done admitted once the busy answer has lapsed', intervalMs: 1_000 },
    );
    expect(answer).toEqual({ code: 201, message: '' });
    expect(suite.sim.runner('wh-done')).toBeUndefined();
    const pod = await f.pod('wh-done');
    expect(pod?.metadata?.deletionTimestamp).toBeDefined();
    expect(pod?.metadata?.labels?.[BUSY_RUNNER_LABEL]).toBeUndefined();
    expect(suite.sim.job(job.jobId)?.result).toBe('succeeded');
  });

  it('lets drains through when the controller is down (failurePolicy Ignore); the budget still holds busy pods', async () => {
    await startWithWebhook('wh-down-idle');
    await idleRunner('wh-down-busy');
    const job = suite.sim.startJob('wh-down-busy', { displayName: 'build' });
    await f.kube.mergePatchStatus(EphemeralRunnerKind, f.namespace, 'wh-down-busy', {
      status: { jobId: job.jobId },
    });
    await f.waitForPod(
      'wh-down-busy',
      (p) => p?.metadata?.labels?.[BUSY_RUNNER_LABEL] === 'true',
      'the busy label on the pod',
    );
    const reviewed = server().reviewed;
    await server().stop();

    expect((await evict('wh-down-busy')).code).toBe(429);
    expect((await evict('wh-down-idle')).code).toBe(201);
    expect(server().reviewed).toBe(reviewed);
    // The controller's own path: it sees the pod terminating and releases the registration after.
    await waitFor(() => suite.sim.runner('wh-down-idle') === undefined, {
      description: 'the idle registration removed by the controller',
    });
  });

  describe('its certificate, made by every replica alike', () => {
    const logger = createLogger({ level: 'silent' });
    let namespace: string;
    let options: WebhookCertificateOptions;

    beforeEach(async () => {
      namespace = await createTestNamespace('er-cert');
      options = await installWebhookObjects(namespace, 443);
    });

    async function stored(): Promise<V1Secret> {
      return admin.get<V1Secret>(SecretKind, namespace, WEBHOOK_NAME);
    }

    it('two replicas starting together end with one certificate, the one each serves', async () => {
      // Both read no Secret (issuing takes far longer than a read), both create: one wins.
      const replicas = [0, 1].map(() => new WebhookCertificate(admin, options, logger));
      const [first, second] = await Promise.all(replicas.map((r) => r.ensure()));
      expect(second.cert).toBe(first.cert);
      expect(second.key).toBe(first.key);
      const secret = await stored();
      expect(pemOf(secret, WEBHOOK_SECRET_KEYS.cert)).toBe(first.cert);
      expect((await webhookConfiguration()).webhooks?.[0].clientConfig?.caBundle).toBe(
        secret.data?.[WEBHOOK_SECRET_KEYS.caBundle],
      );
      // A replica starting later takes it as it is.
      expect((await new WebhookCertificate(admin, options, logger).ensure()).cert).toBe(first.cert);
      expect((await stored()).metadata?.resourceVersion).toBe(secret.metadata?.resourceVersion);
    });

    it('adopts a Secret made before the configuration existed, and sets the caBundle once it does', async () => {
      const configuration = await webhookConfiguration();
      await admin.delete(ValidatingWebhookConfigurationKind, '', options.configurationName);
      const replica = new WebhookCertificate(admin, options, logger);
      const pair = await replica.ensure();
      expect(replica.configurationMissing).toBe(true);
      expect((await stored()).metadata?.ownerReferences).toBeUndefined();

      await admin.create<WebhookConfiguration>(ValidatingWebhookConfigurationKind, {
        ...configuration,
        metadata: { name: options.configurationName },
      });
      expect((await replica.ensure()).cert).toBe(pair.cert);
      expect(replica.configurationMissing).toBe(false);
      const recreated = await webhookConfiguration();
      expect((await stored()).metadata?.ownerReferences).toEqual([
        expect.objectContaining({ kind: 'ValidatingWebhookConfiguration', uid: recreated.metadata?.uid }),
      ]);
      expect(recreated.webhooks?.[0].clientConfig?.caBundle).toBe(
        (await stored()).data?.[WEBHOOK_SECRET_KEYS.caBundle],
      );
    });

    it('renews a certificate with a third of its life left, under the CA the apiserver already trusts', async () => {
      const monthsAgo = Date.now() - 250 * DAY_MS;
      const old = await new WebhookCertificate(admin, options, logger, () => monthsAgo).ensure();
      const bundleBefore = (await webhookConfiguration()).webhooks?.[0].clientConfig?.caBundle;

      const renewed = await new WebhookCertificate(admin, options, logger).ensure();
      expect(renewed.cert).not.toBe(old.cert);
      const cert = new X509Certificate(renewed.cert);
      expect(Date.parse(cert.validTo)).toBeGreaterThan(Date.now() + 300 * DAY_MS);
      expect(pemOf(await stored(), WEBHOOK_SECRET_KEYS.cert)).toBe(renewed.cert);
      // Same authority: the caBundle did not change, so replicas still serving the old pair stay trusted.
      expect((await webhookConfiguration()).webhooks?.[0].clientConfig?.caBundle).toBe(bundleBefore);
    });

    it('rotates an ageing CA keeping the old one in the caBundle until it expires', async () => {
      // A 30-day certificate has a 300-day CA; 210 days on, the CA has a third of its life left.
      const short = { ...options, validityDays: 30 };
      const longAgo = Date.now() - 210 * DAY_MS;
      await new WebhookCertificate(admin, short, logger, () => longAgo).ensure();
      const oldCa = pemOf(await stored(), WEBHOOK_SECRET_KEYS.caBundle);

      const renewed = await new WebhookCertificate(admin, short, logger).ensure();
      const bundle = pemOf(await stored(), WEBHOOK_SECRET_KEYS.caBundle);
      const authorities = bundle.match(/-----BEGIN CERTIFICATE-----/g) ?? [];
      expect(authorities).toHaveLength(2);
      expect(bundle.replace(/\r/g, '')).toContain(oldCa.replace(/\r/g, '').trim());
      const newCa = new X509Certificate(bundle.slice(0, bundle.indexOf('-----END CERTIFICATE-----') + 25));
      expect(new X509Certificate(renewed.cert).verify(newCa.publicKey)).toBe(true);
      expect(
        Buffer.from(
          (await webhookConfiguration()).webhooks?.[0].clientConfig?.caBundle ?? '',
          'base64',
        ).toString(),
      ).toBe(bundle);
    });
  });
});
