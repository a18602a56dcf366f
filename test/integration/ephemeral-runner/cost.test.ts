import type { V1Namespace } from '@kubernetes/client-node';
import { EphemeralRunnerKind } from '@aro/api';
import { KubeClient, NamespaceKind } from '@aro/kube';
import type { RunningSimulator } from '../../../apps/simulator/src';
import {
  ControlPlane,
  apiserverRequestCounts,
  auditedRequestsUpToNow,
  requestCountDelta,
  runnerContainerRunning,
  runnerContainerTerminated,
  setPodStatus,
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
const NAMESPACE = 'cost';
/**
 * Writes by the controller for one successful runner, Events included: 10 for its life, plus 1 for the
 * eviction protection (on by default): the one pod patch that labels and annotates the pod busy when
 * its job starts, without which a drain kills the job, and which also carries the job link (job-link.ts);
 * plus 1 for the job link on the EphemeralRunner (a metadata patch: the listener's job write goes
 * through the status subresource, which drops labels). The namespace's busy-runner PodDisruptionBudget
 * is created once per namespace and controller process, not per runner, and is reported apart.
 */
const WRITE_BUDGET = 12;

describe('The cost of one runner', () => {
  let cp: ControlPlane;
  let sim: RunningSimulator;
  let f: ControllerFixture;
  let sharedKubeconfig: string | undefined;

  beforeAll(async () => {
    // A control plane of its own: apiserver_request_total counts every client, and the shared one
    // serves other suites running in parallel. Its audit log names the object of each request, which
    // is how a runner's own secret reads are told from any other.
    cp = await ControlPlane.start({
      crdPaths: CRD_PATHS,
      withoutControllerManager: true,
      auditLog: true,
      log: () => undefined,
    });
    sharedKubeconfig = process.env.ARO_TEST_KUBECONFIG;
    // The harness's kubelet stand-in acts on the control plane this variable names.
    process.env.ARO_TEST_KUBECONFIG = cp.info.kubeconfigPath;
    sim = await startTestSimulator();
    const kubeConfig = cp.kubeConfig();
    await new KubeClient(kubeConfig).create<V1Namespace>(NamespaceKind, { metadata: { name: NAMESPACE } });
    // The default Event setting: the fixture leaves EVENTS to the controller's configuration.
    f = await startControllerFixture(sim, { kubeConfig, namespace: NAMESPACE });
    // Warm the controller's Actions client: its one-time admin handshake is not a per-runner cost.
    await f.controller.sweep.sweepOnce();
  });
  afterAll(async () => {
    await f?.stop();
    await sim?.stop();
    await cp?.stop();
    if (sharedKubeconfig === undefined) delete process.env.ARO_TEST_KUBECONFIG;
    else process.env.ARO_TEST_KUBECONFIG = sharedKubeconfig;
  });

  /** One successful runner from creation to deletion: registered, job assigned, exit 0, gone. */
  async function runToCompletion(name: string): Promise<void> {
    await f.createRunner(name);
    await f.waitForPod(name, (p) => p !== undefined, 'the runner pod');
    await runnerContainerRunning(NAMESPACE, name);
    await f.waitForRunner(name, (r) => r?.status?.phase === 'Pending', 'phase Pending');
    // The listener records the job it assigned: one status patch that is the listener's, not ours.
    await f.kube.mergePatchStatus(EphemeralRunnerKind, NAMESPACE, name, {
      status: {
        jobId: `job-${name}`,
        jobRepositoryName: 'octo/hello',
        workflowRunId: 7,
        jobWorkflowRef: 'octo/hello/.github/workflows/ci.yml@refs/heads/main',
      },
    });
    await f.waitForRunner(name, (r) => r?.status?.phase === 'Running', 'phase Running');
    sim.runnerExited(name, 0);
    await runnerContainerTerminated(NAMESPACE, name, 0, { phase: 'Succeeded' });
    await f.waitForRunner(name, (r) => r === undefined, 'the EphemeralRunner gone');
    await f.waitForPod(name, (p) => p === undefined, 'the pod gone');
  }

  /** The controller's writes between two request counts (less what the test itself wrote). */
  function controllerWrites(before: Map<string, number>, after: Map<string, number>): Map<string, number> {
    return new Map(
      [...requestCountDelta(before, after)].filter(
        ([key]) => WRITE_VERBS.has(key.split(' ')[0]) && !TEST_ONLY.has(key),
      ),
    );
  }

  it('costs at most 12 Kubernetes writes (10, 1 for the eviction protection and the pod job link, 1 for the runner job link), Events included, and exactly 1 Actions service call from creation to deletion', async () => {
    const before = await apiserverRequestCounts(cp.kubeConfig());
    sim.resetCallCounts();

    await runToCompletion('costly');
    // Let late requests (an event, a stray retry) land before counting.
    await new Promise((r) => setTimeout(r, 1_000));

    const after = await apiserverRequestCounts(cp.kubeConfig());
    const writes = controllerWrites(before, after);
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
        !route.includes('access_tokens') &&
        // The leak audit's first pass over a scale set new to the ledger (orphan-sweep.ts) lists its
        // registrations once, 10 s after its first runner: a cost of the scale set, not of this runner.
        route !== 'GET agents',
    );
    const actionsTotal = actionsCalls.reduce((sum, [, n]) => sum + n, 0);

    const report = [
      'Cost of one successful runner (created, job assigned, exit 0, deleted):',
      ...runnerWrites.sort().map(([key, n]) => `  ${key}: ${n}`),
      `  + ${events} Event creates (the default EVENTS setting)`,
      `  = ${total + events} Kubernetes writes by the controller (budget ${WRITE_BUDGET})`,
      `  (apart: ${writes.get('POST poddisruptionbudgets') ?? 0} busy-runner PodDisruptionBudget create, once per namespace)`,
      ...actionsCalls.map(([route, n]) => `  Actions: ${route}: ${n}`),
      `  = ${actionsTotal} Actions service call(s) (budget 1)`,
    ].join('\n');
    console.log(report);

    // The busy label and the job link were written: both are part of what was measured.
    expect(writes.get('PATCH pods') ?? 0).toBe(1);
    expect(writes.get('PATCH ephemeralrunners') ?? 0).toBe(3);
    expect(total + events).toBeLessThanOrEqual(WRITE_BUDGET);
    expect(actionsTotal).toBe(1);
    expect(sim.callCount('POST runnerscalesets/{id}/generatejitconfig')).toBe(1);
  });

  it('reads the jitconfig secret of a runner at most twice from creation to deletion, several runners at once', async () => {
    const names = ['reads-a', 'reads-b', 'reads-c', 'reads-d'];
    await Promise.all(names.map((name) => runToCompletion(name)));
    // Let late requests (a reconcile racing the deletion) land before counting.
    await new Promise((r) => setTimeout(r, 1_000));
    const requests = await auditedRequestsUpToNow(f.kube, NAMESPACE, cp.info.auditLogPath!);

    const ofSecret = (name: string, verb: string) =>
      requests.filter(
        (r) => r.verb === verb && r.resource === 'secrets' && r.namespace === NAMESPACE && r.name === name,
      ).length;
    const perRunner = names.map((name) => ({
      name,
      reads: ofSecret(name, 'get'),
      deletes: ofSecret(name, 'delete'),
    }));
    console.log(
      [
        'Requests for the jitconfig secret per runner (audit log):',
        ...perRunner.map((r) => `  ${r.name}: ${r.reads} get, ${r.deletes} delete`),
      ].join('\n'),
    );
    // Evidence that the log holds each runner's whole life: the cleanup deleted its secret.
    expect(perRunner.filter((r) => r.deletes === 0).map((r) => r.name)).toEqual([]);
    expect(perRunner.filter((r) => r.reads > 2)).toEqual([]);
  });

  it('costs a runner the start watchdog fails at most 10 writes, Events included, as any failed runner', async () => {
    const before = await apiserverRequestCounts(cp.kubeConfig());
    sim.resetCallCounts();
    await f.createRunner('never-starts');
    await f.waitForPod('never-starts', (p) => p !== undefined, 'the runner pod');
    await setPodStatus(NAMESPACE, 'never-starts', (pod) => ({
      phase: 'Pending',
      containerStatuses: pod.spec!.containers.map((c) => ({
        name: c.name,
        image: c.image ?? '',
        imageID: '',
        ready: false,
        restartCount: 0,
        state: { waiting: { reason: 'InvalidImageName', message: 'invalid reference format' } },
      })),
    }));
    await f.waitForRunner('never-starts', (r) => r?.status?.phase === 'Failed', 'phase Failed');
    await f.waitForPod('never-starts', (p) => p === undefined, 'the pod deleted');
    // Its set would delete it; here the test does, as a set would.
    await f.kube.delete(EphemeralRunnerKind, NAMESPACE, 'never-starts');
    await f.waitForRunner('never-starts', (r) => r === undefined, 'the EphemeralRunner gone');
    await new Promise((r) => setTimeout(r, 1_000));
    const after = await apiserverRequestCounts(cp.kubeConfig());
    const writes = controllerWrites(before, after);
    writes.delete('DELETE ephemeralrunners'); // the test's, as the set's
    const runnerWrites = [...writes].filter(([key, n]) => RUNNER_RESOURCES.test(key) && n > 0);
    const total = runnerWrites.reduce((sum, [, n]) => sum + n, 0) + (writes.get('POST events') ?? 0);
    console.log(
      [
        'Cost of one runner the start watchdog failed (InvalidImageName), creation to deletion:',
        ...runnerWrites.sort().map(([key, n]) => `  ${key}: ${n}`),
        `  + ${writes.get('POST events') ?? 0} Event creates`,
        `  = ${total} Kubernetes writes by the controller`,
      ].join('\n'),
    );
    // finalizers add, secret, pod, status Failed, registration finalizer release, pod and secret
    // deletes, the Warning Event, the last finalizer: no more than a failed runner always cost.
    expect(total).toBeLessThanOrEqual(10);
  });
});
