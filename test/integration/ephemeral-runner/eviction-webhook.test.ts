import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiException, CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { EphemeralRunnerKind, type ResourceKind } from '@aro/api';
import { BUSY_RUNNER_LABEL, EVICTION_WEBHOOK_PATH, EvictionWebhookLifecycle } from '@aro/controllers';
import {
  finishPodDeletion,
  runnerContainerRunning,
  runnerContainerTerminated,
  testKubeConfig,
  waitFor,
} from '../../harness';
import { createCertificateAuthority, issueServingCertificate } from '../../harness/pki';
import { ControllerFixture, controllerSuite } from './fixture';

const ValidatingWebhookConfigurationKind: ResourceKind = {
  group: 'admissionregistration.k8s.io',
  version: 'v1',
  kind: 'ValidatingWebhookConfiguration',
  plural: 'validatingwebhookconfigurations',
  namespaced: false,
};

/**
 * The eviction admission webhook (libs/controllers/src/eviction-webhook) on the real apiserver: the
 * controller app serves it on loopback with a certificate the test made, and a
 * ValidatingWebhookConfiguration like the chart's (failurePolicy Ignore) points the apiserver at it,
 * scoped to the test's namespace. The test drains as `kubectl drain` does, through the Eviction API.
 */
describe('EphemeralRunner eviction webhook', () => {
  const suite = controllerSuite();
  let f: ControllerFixture;
  let certDir: string;
  let tls: { cert: string; key: string };
  let caBundle: string;
  let configurationName: string | undefined;

  beforeAll(async () => {
    certDir = await mkdtemp(join(tmpdir(), 'aro-eviction-webhook-'));
    const ca = await createCertificateAuthority(certDir, 'ca', 'aro-eviction-webhook-ca');
    const serving = await issueServingCertificate(ca, certDir, 'webhook');
    tls = { cert: await readFile(serving.certPath, 'utf8'), key: await readFile(serving.keyPath, 'utf8') };
    caBundle = Buffer.from(await readFile(ca.certPath)).toString('base64');
  });
  afterAll(async () => {
    await rm(certDir, { recursive: true, force: true });
  });
  afterEach(async () => {
    if (configurationName) await f.kube.delete(ValidatingWebhookConfigurationKind, '', configurationName);
    configurationName = undefined;
    suite.sim.onRunnerRemoved = undefined;
  });

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
   * The controller with the webhook, the configuration as the chart renders it, and a dry-run eviction
   * of `probePod` until the apiserver calls the webhook (it loads configurations asynchronously).
   */
  async function startWithWebhook(probePod: string): Promise<void> {
    f = await suite.start({ config: { evictionProtection: true, evictionWebhook: { tls } } });
    configurationName = `aro-eviction-${f.namespace}`;
    await f.kube.create(ValidatingWebhookConfigurationKind, {
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
          clientConfig: { url: `https://127.0.0.1:${server().port()}${EVICTION_WEBHOOK_PATH}`, caBundle },
          rules: [
            {
              apiGroups: [''],
              apiVersions: ['v1'],
              operations: ['CREATE'],
              resources: ['pods/eviction'],
              scope: 'Namespaced',
            },
          ],
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': f.namespace } },
        },
      ],
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
});
