import type { V1Namespace } from '@kubernetes/client-node';
import { EphemeralRunnerKind } from '@aro/api';
import { KubeClient, NamespaceKind } from '@aro/kube';
import type { RunningSimulator } from '../../../apps/simulator/src';
import {
  ControlPlane,
  apiserverRequestCounts,
  requestCountDelta,
  runnerContainerRunning,
  runnerContainerTerminated,
} from '../../harness';
import { CRD_PATHS } from '../../harness/global-setup';
import { ControllerFixture, startControllerFixture, startTestSimulator } from './fixture';

const WRITE_VERBS = new Set(['POST', 'PUT', 'PATCH', 'DELETE', 'APPLY', 'DELETECOLLECTION']);
/** Written by the test itself, playing the user (create), the scheduler (binding) and the kubelet (status). */
const TEST_ONLY = new Set([
  'POST ephemeralrunners',
  'POST pods/binding',
  'PUT pods/status',
  'PATCH pods/status',
]);
const RUNNER_RESOURCES = /^(POST|PUT|PATCH|DELETE|APPLY) (ephemeralrunners|pods|secrets)(\/|$)/;

describe('The cost of one runner', () => {
  let cp: ControlPlane;
  let sim: RunningSimulator;
  let f: ControllerFixture;
  let sharedKubeconfig: string | undefined;

  beforeAll(async () => {
    // A control plane of its own: apiserver_request_total counts every client, and the shared one
    // serves other suites running in parallel.
    cp = await ControlPlane.start({
      crdPaths: CRD_PATHS,
      withoutControllerManager: true,
      log: () => undefined,
    });
    sharedKubeconfig = process.env.ARO_TEST_KUBECONFIG;
    // The harness's kubelet stand-in acts on the control plane this variable names.
    process.env.ARO_TEST_KUBECONFIG = cp.info.kubeconfigPath;
    sim = await startTestSimulator();
  });
  afterAll(async () => {
    await f?.stop();
    await sim?.stop();
    await cp?.stop();
    if (sharedKubeconfig === undefined) delete process.env.ARO_TEST_KUBECONFIG;
    else process.env.ARO_TEST_KUBECONFIG = sharedKubeconfig;
  });

  it('costs at most 10 Kubernetes writes and exactly 1 Actions service call from creation to deletion', async () => {
    const kubeConfig = cp.kubeConfig();
    const namespace = 'cost';
    await new KubeClient(kubeConfig).create<V1Namespace>(NamespaceKind, { metadata: { name: namespace } });
    f = await startControllerFixture(sim, { kubeConfig, namespace });
    // Warm the controller's Actions client: its one-time admin handshake is not a per-runner cost.
    await f.controller.sweep.sweepOnce();

    const before = await apiserverRequestCounts(cp.kubeConfig());
    sim.resetCallCounts();

    await f.createRunner('costly');
    await f.waitForPod('costly', (p) => p !== undefined, 'the runner pod');
    await runnerContainerRunning(namespace, 'costly');
    await f.waitForRunner('costly', (r) => r?.status?.phase === 'Pending', 'phase Pending');
    // The listener records the job it assigned: one status patch that is the listener's, not ours.
    await f.kube.mergePatchStatus(EphemeralRunnerKind, namespace, 'costly', { status: { jobId: 'job-1' } });
    await f.waitForRunner('costly', (r) => r?.status?.phase === 'Running', 'phase Running');
    sim.runnerExited('costly', 0);
    await runnerContainerTerminated(namespace, 'costly', 0, { phase: 'Succeeded' });
    await f.waitForRunner('costly', (r) => r === undefined, 'the EphemeralRunner gone');
    await f.waitForPod('costly', (p) => p === undefined, 'the pod gone');
    // Let late requests (an event, a stray retry) land before counting.
    await new Promise((r) => setTimeout(r, 1_000));

    const after = await apiserverRequestCounts(cp.kubeConfig());
    const writes = new Map(
      [...requestCountDelta(before, after)].filter(
        ([key]) => WRITE_VERBS.has(key.split(' ')[0]) && !TEST_ONLY.has(key),
      ),
    );
    // The listener's job patch is the only status write of ours among the runner's status writes.
    writes.set('PATCH ephemeralrunners/status', (writes.get('PATCH ephemeralrunners/status') ?? 0) - 1);
    const runnerWrites = [...writes].filter(([key, n]) => RUNNER_RESOURCES.test(key) && n > 0);
    const total = runnerWrites.reduce((sum, [, n]) => sum + n, 0);
    const events = writes.get('POST events') ?? 0;
    const actionsCalls = Object.entries(sim.callCounts()).filter(
      ([route, n]) =>
        n > 0 &&
        !route.includes('registration-token') &&
        !route.includes('runner-registration') &&
        !route.includes('access_tokens'),
    );
    const actionsTotal = actionsCalls.reduce((sum, [, n]) => sum + n, 0);

    const report = [
      'Cost of one successful runner (created, job assigned, exit 0, deleted):',
      ...runnerWrites.sort().map(([key, n]) => `  ${key}: ${n}`),
      `  = ${total} Kubernetes writes by the controller (budget 10)`,
      `  + ${events} Event creates (EVENTS=all; none with EVENTS=none)`,
      ...actionsCalls.map(([route, n]) => `  Actions: ${route}: ${n}`),
      `  = ${actionsTotal} Actions service call(s) (budget 1)`,
    ].join('\n');
    console.log(report);

    expect(total).toBeLessThanOrEqual(10);
    expect(actionsTotal).toBe(1);
    expect(sim.callCount('POST runnerscalesets/{id}/generatejitconfig')).toBe(1);
  });
});
