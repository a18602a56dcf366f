import type { CoreV1Event } from '@kubernetes/client-node';
import { EPHEMERAL_RUNNER_ACTIONS_FINALIZER, EphemeralRunner, EphemeralRunnerKind } from '@aro/api';
import { EventKind } from '@aro/kube';
import { runnerContainerRunning, runnerContainerTerminated, waitFor } from '../../harness';
import { ControllerFixture, controllerSuite } from './fixture';

const ResourceQuotaKind = {
  group: '',
  version: 'v1',
  kind: 'ResourceQuota',
  plural: 'resourcequotas',
  namespaced: true,
};
const PolicyKind = {
  group: 'admissionregistration.k8s.io',
  version: 'v1',
  kind: 'ValidatingAdmissionPolicy',
  plural: 'validatingadmissionpolicies',
  namespaced: false,
};
const BindingKind = {
  ...PolicyKind,
  kind: 'ValidatingAdmissionPolicyBinding',
  plural: 'validatingadmissionpolicybindings',
};

describe('EphemeralRunner pod creation', () => {
  const suite = controllerSuite();
  let f: ControllerFixture;

  const events = async (name: string, reason: string) =>
    (await f.kube.list<CoreV1Event>(EventKind, { namespace: f.namespace })).filter(
      (e) => e.involvedObject?.name === name && e.reason === reason,
    );

  /**
   * A quota of no pods. Without kube-controller-manager's quota controller the test writes the quota
   * status itself, as that controller would, so that admission refuses with "exceeded quota".
   */
  async function exhaustPodQuota(): Promise<void> {
    await f.kube.create(ResourceQuotaKind, {
      metadata: { name: 'no-pods', namespace: f.namespace },
      spec: { hard: { pods: '0' } },
    } as never);
    await f.kube.mergePatchStatus(ResourceQuotaKind, f.namespace, 'no-pods', {
      status: { hard: { pods: '0' }, used: { pods: '0' } },
    });
  }

  it('passes the proxy settings to the runner container from the proxy secret (scenario 23)', async () => {
    f = await suite.start();
    await f.createRunner('pod-a', (spec) => {
      spec.proxySecretRef = 'set-proxy';
      // The controller's own calls to the simulator honour the same settings: keep them off the proxy.
      spec.proxy = {
        http: { url: 'http://proxy:3128' },
        https: { url: 'http://proxy:3128' },
        noProxy: ['127.0.0.1'],
      };
    });
    const pod = await f.waitForPod('pod-a', (p) => p !== undefined, 'the runner pod');
    const env = pod!.spec!.containers.find((c) => c.name === 'runner')!.env!;
    for (const name of ['http_proxy', 'https_proxy', 'no_proxy']) {
      expect(env.find((e) => e.name === name)?.valueFrom?.secretKeyRef).toEqual({
        name: 'set-proxy',
        key: name,
      });
    }
  });

  it('sets only the proxy variables the spec configures', async () => {
    f = await suite.start();
    await f.createRunner('pod-b', (spec) => {
      spec.proxySecretRef = 'set-proxy';
      spec.proxy = { https: { url: 'http://proxy:3128' } };
    });
    const pod = await f.waitForPod('pod-b', (p) => p !== undefined, 'the runner pod');
    const names = pod!.spec!.containers[0].env!.map((e) => e.name);
    expect(names).toContain('https_proxy');
    expect(names).not.toContain('http_proxy');
    expect(names).not.toContain('no_proxy');
  });

  it('marks the runner Failed (InvalidPod) and releases its registration when the pod is invalid (scenario 11)', async () => {
    f = await suite.start();
    await f.createRunner('pod-c', (spec) => {
      spec.spec!.containers[0].name = 'Not_A_Valid_Name';
      spec.spec!.containers.push({ name: 'runner', image: 'r' });
    });
    const runner = await f.waitForRunner('pod-c', (r) => r?.status?.phase === 'Failed', 'phase Failed');
    expect(runner?.status?.reason).toBe('InvalidPod');
    expect(runner?.status?.message).toContain('Failed to create the pod');
    await f.waitForRunner(
      'pod-c',
      (r) => !(r?.metadata?.finalizers ?? []).includes(EPHEMERAL_RUNNER_ACTIONS_FINALIZER),
      'the registration finalizer dropped',
    );
    await waitFor(() => suite.sim.runner('pod-c') === undefined, { description: 'the registration removed' });
    expect((await events('pod-c', 'InvalidPod')).length).toBeGreaterThan(0);
  });

  it('marks the runner Failed when the pod is forbidden for another reason than quota', async () => {
    f = await suite.start({ start: false });
    const policy = `deny-runner-pods-${f.namespace}`;
    await f.kube.create(PolicyKind, {
      metadata: { name: policy },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] },
          ],
        },
        validations: [
          { expression: 'false', reason: 'Forbidden', message: 'runner pods are not allowed here' },
        ],
      },
    } as never);
    await f.kube.create(BindingKind, {
      metadata: { name: policy },
      spec: {
        policyName: policy,
        validationActions: ['Deny'],
        matchResources: {
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': f.namespace } },
        },
      },
    } as never);
    try {
      // The policy takes a moment to reach the admission chain: wait until it refuses a pod.
      await waitFor(
        async () => {
          try {
            await f.kube.create({ group: '', version: 'v1', kind: 'Pod', plural: 'pods', namespaced: true }, {
              metadata: { generateName: 'probe-', namespace: f.namespace },
              spec: { containers: [{ name: 'c', image: 'i' }] },
            } as never);
            return false;
          } catch {
            return true;
          }
        },
        { description: 'the admission policy to refuse pods' },
      );
      await f.createRunner('pod-d');
      await f.manager.start();
      const runner = await f.waitForRunner('pod-d', (r) => r?.status?.phase === 'Failed', 'phase Failed');
      expect(runner?.status?.reason).toBe('InvalidPod');
      expect(runner?.status?.message).toContain('runner pods are not allowed here');
    } finally {
      await f.kube.delete(BindingKind, '', policy);
      await f.kube.delete(PolicyKind, '', policy);
    }
  });

  it('waits and retries while the namespace quota is exhausted, without failing the runner', async () => {
    f = await suite.start({ start: false });
    await exhaustPodQuota();
    await f.createRunner('pod-e');
    await f.manager.start();
    const warning = await waitFor(async () => (await events('pod-e', 'QuotaExceeded'))[0], {
      description: 'a QuotaExceeded event',
    });
    expect(warning.message).toContain('exceeded quota');
    const runner = await f.runner('pod-e');
    expect(runner?.status?.phase).toBeUndefined();
    expect(runner?.metadata?.deletionTimestamp).toBeUndefined();
  });

  it('recreates a runner whose pod is still refused for quota ten minutes after it was created', async () => {
    const eleven = 11 * 60_000;
    f = await suite.start({ start: false, now: () => Date.now() + eleven });
    await exhaustPodQuota();
    await f.createRunner('pod-f');
    await f.manager.start();
    await f.waitForRunner('pod-f', (r) => r === undefined, 'the EphemeralRunner to be deleted');
    await waitFor(() => suite.sim.runner('pod-f') === undefined, { description: 'its registration removed' });
  });

  it('marks the runner Outdated on exit code 7 and releases its registration once', async () => {
    f = await suite.start();
    await f.createRunner('pod-g');
    await f.waitForPod('pod-g', (p) => p !== undefined, 'the runner pod');
    await runnerContainerRunning(f.namespace, 'pod-g');
    await f.waitForRunner('pod-g', (r) => r?.status?.phase === 'Pending', 'phase Pending');
    suite.sim.resetCallCounts();
    await runnerContainerTerminated(f.namespace, 'pod-g', 7, { phase: 'Failed' });
    const runner = await f.waitForRunner('pod-g', (r) => r?.status?.phase === 'Outdated', 'phase Outdated');
    expect(runner?.status).toMatchObject({ reason: 'Outdated', message: 'Runner is deprecated' });
    await waitFor(() => suite.sim.runner('pod-g') === undefined, { description: 'the registration removed' });
    await f.waitForRunner(
      'pod-g',
      (r) => !(r?.metadata?.finalizers ?? []).includes(EPHEMERAL_RUNNER_ACTIONS_FINALIZER),
      'the registration finalizer dropped',
    );
    // A finished runner keeps nothing running: its pod and secret go before the set deletes it.
    await f.waitForPod('pod-g', (p) => p === undefined, 'the pod of the Outdated runner deleted');
    await waitFor(async () => (await f.secret('pod-g')) === undefined, {
      description: 'the jitconfig secret of the Outdated runner deleted',
    });
    // The set deletes it later: no second removal is asked for.
    await f.kube.delete(EphemeralRunnerKind, f.namespace, 'pod-g');
    await f.waitForRunner('pod-g', (r) => r === undefined, 'the EphemeralRunner gone');
    expect(suite.sim.callCount('DELETE agents/{id}')).toBe(1);
    const final = await f.kube.list<EphemeralRunner>(EphemeralRunnerKind, { namespace: f.namespace });
    expect(final).toHaveLength(0);
  });

  it('marks the runner Outdated on exit code 7 while the pod phase is still Running (a sidecar runs on)', async () => {
    f = await suite.start();
    await f.createRunner('pod-h', (spec) => {
      spec.spec!.containers.push({ name: 'sidecar', image: 'busybox' });
    });
    await f.waitForPod('pod-h', (p) => p !== undefined, 'the runner pod');
    await runnerContainerRunning(f.namespace, 'pod-h');
    await f.waitForRunner('pod-h', (r) => r?.status?.phase === 'Pending', 'phase Pending');
    await runnerContainerTerminated(f.namespace, 'pod-h', 7, { phase: 'Running' });
    const runner = await f.waitForRunner('pod-h', (r) => r?.status?.phase === 'Outdated', 'phase Outdated');
    expect(runner?.status?.reason).toBe('Outdated');
    await waitFor(() => suite.sim.runner('pod-h') === undefined, { description: 'the registration removed' });
    await f.waitForPod(
      'pod-h',
      (p) => p === undefined || p.metadata?.deletionTimestamp !== undefined,
      'the pod of the Outdated runner deleted',
    );
    await waitFor(async () => (await f.secret('pod-h')) === undefined, {
      description: 'the jitconfig secret deleted',
    });
  });

  it('deletes the pod and the secret of a runner that is Failed while its pod exists', async () => {
    f = await suite.start();
    await f.createRunner('pod-i');
    await f.waitForPod('pod-i', (p) => p !== undefined, 'the runner pod');
    await runnerContainerRunning(f.namespace, 'pod-i');
    await f.waitForRunner('pod-i', (r) => r?.status?.phase === 'Pending', 'phase Pending');
    // Failed as a previous run of the controller left it (e.g. marked, then the process died).
    await f.kube.mergePatchStatus<EphemeralRunner>(EphemeralRunnerKind, f.namespace, 'pod-i', {
      status: { phase: 'Failed', reason: 'InvalidPod', message: 'set by the test' },
    });
    await f.waitForPod(
      'pod-i',
      (p) => p === undefined || p.metadata?.deletionTimestamp !== undefined,
      'the pod of the Failed runner deleted',
    );
    await waitFor(async () => (await f.secret('pod-i')) === undefined, {
      description: 'the jitconfig secret of the Failed runner deleted',
    });
    await waitFor(() => suite.sim.runner('pod-i') === undefined, { description: 'the registration removed' });
  });
});
