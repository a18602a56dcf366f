import type { V1Secret } from '@kubernetes/client-node';
import { AutoscalingRunnerSet, AutoscalingRunnerSetKind, runnerProxySecretName } from '@aro/api';
import { RoleBindingKind, RoleKind, SecretKind } from '@aro/kube';
import {
  ControlPlane,
  auditedRequestsUpToNow,
  runnerContainerRunning,
  runnerContainerTerminated,
  waitFor,
} from '../../harness';
import { CRD_PATHS } from '../../harness/global-setup';
import {
  ScaleSetFixture,
  autoscalingRunnerSet,
  createRunnerSet,
  createScaleSetOnService,
  live,
  runnerPod,
  scaleSetSuite,
  uniqueName,
  waitForRunners,
} from './fixture';

jest.setTimeout(180_000);

/**
 * What the runner-set controller asks of the apiserver per job, from the apiserver's audit log (which
 * names the object of each request): the waste it once showed in scale-set mode stays gone.
 */
describe('The cost of a runner set per job', () => {
  let cp: ControlPlane;
  let sharedKubeconfig: string | undefined;
  // Before the suite's hooks: the fixture and the harness's kubelet stand-in act on the control plane
  // ARO_TEST_KUBECONFIG names, and this one must be ours alone, with an audit log.
  beforeAll(async () => {
    cp = await ControlPlane.start({
      crdPaths: CRD_PATHS,
      withoutControllerManager: true,
      auditLog: true,
      log: () => undefined,
    });
    sharedKubeconfig = process.env.ARO_TEST_KUBECONFIG;
    process.env.ARO_TEST_KUBECONFIG = cp.info.kubeconfigPath;
  });
  afterAll(async () => {
    await cp?.stop();
    if (sharedKubeconfig === undefined) delete process.env.ARO_TEST_KUBECONFIG;
    else process.env.ARO_TEST_KUBECONFIG = sharedKubeconfig;
  });
  const suite = scaleSetSuite();

  /**
   * Plays the kubelet and the runners until `count` runners of the set run and are registered, then
   * the service starts a job on each (not yet reported by the listener).
   */
  async function runnersWithJobs(f: ScaleSetFixture, name: string, count: number) {
    const started = new Set<string>();
    const runners = await waitForRunners(
      f,
      name,
      (all) => {
        for (const r of live(all)) {
          const runner = r.metadata?.name ?? '';
          if (started.has(runner)) continue;
          void runnerPod(f, runner).then(async (pod) => {
            if (pod && !started.has(runner)) {
              started.add(runner);
              await runnerContainerRunning(f.namespace, runner).catch(() => started.delete(runner));
            }
          });
        }
        return live(all).length === count && all.every((r) => (r.status?.runnerId ?? 0) > 0);
      },
      `${count} registered runners`,
    );
    return new Map(
      runners.map((r) => [
        r.metadata!.name!,
        suite.sim.startJob(r.metadata!.name!, { displayName: 'build' }),
      ]),
    );
  }

  /** The job ends, its runner exits 0 and its pod completes. */
  async function finishJob(f: ScaleSetFixture, runner: string, jobId: string): Promise<void> {
    suite.sim.completeJob(jobId, 'succeeded');
    suite.sim.runnerExited(runner, 0);
    await runnerContainerTerminated(f.namespace, runner, 0, { phase: 'Succeeded' });
  }

  it('never reads the proxy secret of a set without a proxy, deletes each finished runner once, and links each job in one runner patch', async () => {
    const f = await suite.start();
    const name = uniqueName('cost');
    const scaleSetId = await createScaleSetOnService(suite.sim, name);
    await createRunnerSet(f, name, scaleSetId);
    const count = 3;
    await f.scale(name, count, 1);

    // Each runner starts, registers and takes a job, as the kubelet, runner and listener would.
    const jobs = await runnersWithJobs(f, name, count);
    const names = [...jobs.keys()];
    for (const [runner, job] of jobs) await f.reportJobStarted(runner, job.jobId);
    // The listener's next patch once the jobs are assigned: no runner beyond the busy ones.
    await f.scale(name, 0, 2);

    // The jobs end, the runners exit 0 and are removed.
    for (const [runner, job] of jobs) await finishJob(f, runner, job.jobId);
    await waitForRunners(f, name, (all) => all.length === 0, 'every runner gone');
    await waitFor(async () => (await f.runnerSet(name))?.status?.currentReplicas === 0, {
      description: 'the set counting 0 runners',
    });
    const requests = await auditedRequestsUpToNow(f.kube, f.namespace, cp.info.auditLogPath!);

    const requestsFor = (resource: string, objectName: string, verb: string) =>
      requests.filter(
        (r) =>
          r.verb === verb && r.resource === resource && r.namespace === f.namespace && r.name === objectName,
      );
    const proxySecretReads = requestsFor('secrets', runnerProxySecretName(name, f.namespace), 'get');
    const deletesPerRunner = names.map((runner) => ({
      runner,
      deletes: requestsFor('ephemeralrunners', runner, 'delete').length,
    }));
    // The controller's metadata patches of each runner and its pod (the test writes only status): the
    // finalizers added and removed, and the job link (job-link.ts) on the runner; on the pod, the one
    // patch that marks it busy and names its job.
    const patchesPerRunner = names.map((runner) => ({
      runner,
      runnerPatches: requestsFor('ephemeralrunners', runner, 'patch').length,
      podPatches: requestsFor('pods', runner, 'patch').length,
    }));
    console.log(
      [
        `Runner-set requests for ${count} jobs (audit log):`,
        `  proxy secret reads (no proxy configured): ${proxySecretReads.length}`,
        ...deletesPerRunner.map((r) => `  ${r.runner}: ${r.deletes} delete(s)`),
        ...patchesPerRunner.map(
          (r) => `  ${r.runner}: ${r.runnerPatches} runner patch(es), ${r.podPatches} pod patch(es)`,
        ),
      ].join('\n'),
    );
    // Each runner's end is in the log (it was deleted), and only once: its own controller deletes it as
    // its job ends, and the set's pass that sees it Succeeded before the deletion skips the request.
    expect(deletesPerRunner.filter((r) => r.deletes !== 1)).toEqual([]);
    expect(proxySecretReads).toEqual([]);
    // The job link costs the runner one patch and the pod none beyond its busy patch.
    expect(patchesPerRunner.filter((r) => r.runnerPatches > 3 || r.podPatches !== 1)).toEqual([]);
  });

  it("writes the set's status about once per 2 s of a burst, not on every runner's start and end", async () => {
    const f = await suite.start();
    const name = uniqueName('status');
    const scaleSetId = await createScaleSetOnService(suite.sim, name);
    await createRunnerSet(f, name, scaleSetId);
    const burst = 12;
    await f.scale(name, burst, 1);
    const jobs = await runnersWithJobs(f, name, burst);
    for (const [runner, job] of jobs) await f.reportJobStarted(runner, job.jobId);
    // Each job ends in turn, as a burst's do: every end moves the set's counts.
    const began = Date.now();
    for (const [runner, job] of jobs) await finishJob(f, runner, job.jobId);
    await waitForRunners(f, name, (all) => all.length === 0, 'every runner gone');
    await waitFor(async () => (await f.runnerSet(name))?.status?.currentReplicas === 0, {
      description: 'the set counting 0 runners',
    });
    const seconds = (Date.now() - began) / 1000;
    const statusWrites = (await auditedRequestsUpToNow(f.kube, f.namespace, cp.info.auditLogPath!)).filter(
      (r) => r.verb === 'patch' && r.resource === 'ephemeralrunnersets/status' && r.name === name,
    ).length;
    console.log(
      `EphemeralRunnerSet status writes for a burst of ${burst} jobs: ${statusWrites} (${seconds.toFixed(1)} s from the first end to the last)`,
    );
    // Every runner's start and end, and its Pending -> Running move, used to be a write each (about 3 a
    // job); now a change of the counts alone waits out a 2 s window. The bound: one write per job at
    // most, whatever the machine's speed (a slow one spreads the ends over more windows).
    expect(statusWrites).toBeLessThanOrEqual(burst);
  });

  it('creates one runner per job of a burst: one that ends under a count that still held its job is not replaced', async () => {
    const f = await suite.start();
    const name = uniqueName('burst');
    const scaleSetId = await createScaleSetOnService(suite.sim, name);
    await createRunnerSet(f, name, scaleSetId);
    const burst = 10;
    // The burst's jobs are acquired: the listener asks for one runner per job.
    await f.scale(name, burst, 1);
    const jobs = await runnersWithJobs(f, name, burst);
    // The message with the JobStarted events: the listener writes the same count under a new patch ID
    // (the service's statistics still count every job), then records each job on its runner.
    await f.scale(name, burst, 2);
    for (const [runner, job] of jobs) await f.reportJobStarted(runner, job.jobId);
    await waitFor(async () => (await f.runnerSet(name))?.status?.runningEphemeralRunners === burst, {
      description: `the set counting ${burst} running runners, after the second patch`,
    });

    // One job ends before the listener's next message: its runner finishes and goes. The set's pass
    // that sees it gone (its status says so) is the one that used to replace it under patch 2.
    const [first, firstJob] = [...jobs][0];
    await finishJob(f, first, firstJob.jobId);
    // Either the set counts the runners left, or it has made a new one (what this test catches).
    const replacements = await waitFor(
      async () => {
        const made = live(await f.runners(name)).filter((r) => !jobs.has(r.metadata?.name ?? ''));
        if (made.length > 0) return made;
        return (await f.runnerSet(name))?.status?.currentReplicas === burst - 1 ? made : undefined;
      },
      { description: `the set counting ${burst - 1} runners once the first is gone, or a new runner` },
    );
    const afterFirst = live(await f.runners(name)).length;

    // The listener's next message (JobCompleted; the statistics count one job fewer), then the rest end.
    await f.scale(name, burst - 1, 3);
    for (const [runner, job] of [...jobs].slice(1)) await finishJob(f, runner, job.jobId);
    await waitForRunners(f, name, (all) => all.length === 0, 'every runner gone');
    const requests = await auditedRequestsUpToNow(f.kube, f.namespace, cp.info.auditLogPath!);
    const created = requests.filter(
      (r) => r.verb === 'create' && r.resource === 'ephemeralrunners' && r.namespace === f.namespace,
    ).length;
    console.log(
      [
        `Runners for a burst of ${burst} jobs (audit log):`,
        `  created: ${created}`,
        `  live after the first job ended under the standing count: ${afterFirst}`,
        `  made under that count: ${replacements.map((r) => r.metadata?.name).join(', ') || 'none'}`,
      ].join('\n'),
    );
    expect({ created, afterFirst, replaced: replacements.length }).toEqual({
      created: burst,
      afterFirst: burst - 1,
      replaced: 0,
    });
  });

  it('in shared listener mode, passes over a configured listener without reading its Role, RoleBinding or the configs Secret from the API', async () => {
    const f = await suite.start({
      listener: {
        listenerMode: 'shared',
        sharedServiceAccountName: 'aro-shared-listener',
        sharedConfigSecretName: 'aro-shared-listener-configs',
        sharedStatusIntervalMs: 200,
      },
    });
    const name = uniqueName('shared');
    await f.kube.create<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, autoscalingRunnerSet(f, name, 2));
    // Configured: its Role and RoleBinding made, its config in the shared Secret.
    await waitFor(
      async () =>
        (await f.list(RoleKind)).length > 0 &&
        (await f.list(RoleBindingKind)).length > 0 &&
        (await f.read<V1Secret>(SecretKind, 'aro-shared-listener-configs', f.controllerNamespace)) !==
          undefined,
      { description: "the listener's Role, RoleBinding and shared config" },
    );
    const passes = async () =>
      (await f.registry.getSingleMetric('controller_runtime_reconcile_total')?.get())?.values
        .filter((v) => v.labels.controller === 'autoscalinglistener')
        .reduce((sum, v) => sum + v.value, 0) ?? 0;
    // The configs Secret is read from its watch once that has listed: wait for that list, as the server
    // recorded it, before counting.
    await waitFor(
      async () =>
        (await auditedRequestsUpToNow(f.kube, f.namespace, cp.info.auditLogPath!)).some(
          (r) => r.verb === 'list' && r.resource === 'secrets' && r.namespace === f.controllerNamespace,
        ),
      { description: "the controller's list of the shared configs Secret (its watch's first step)" },
    );
    const from = (await auditedRequestsUpToNow(f.kube, f.namespace, cp.info.auditLogPath!)).length;
    const passesBefore = await passes();
    // Evidence the controller looked: its status passes (every 200 ms here) went on.
    await waitFor(async () => (await passes()) >= passesBefore + 10, {
      description: 'ten more passes of the listener controller',
    });
    const reads = (await auditedRequestsUpToNow(f.kube, f.namespace, cp.info.auditLogPath!))
      .slice(from)
      .filter(
        (r) =>
          r.verb === 'get' &&
          (((r.resource === 'roles' || r.resource === 'rolebindings') && r.namespace === f.namespace) ||
            (r.resource === 'secrets' &&
              r.namespace === f.controllerNamespace &&
              r.name === 'aro-shared-listener-configs')),
      )
      .map((r) => `${r.resource}/${r.name}`);
    console.log(
      `Role, RoleBinding and configs Secret reads over ten shared-mode status passes (audit log): ${reads.length}`,
    );
    expect(reads).toEqual([]);
  });
});
