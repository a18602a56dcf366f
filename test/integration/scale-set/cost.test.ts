import type { V1ConfigMap } from '@kubernetes/client-node';
import { runnerProxySecretName } from '@aro/api';
import { ConfigMapKind, isNotFound } from '@aro/kube';
import {
  type AuditedRequest,
  ControlPlane,
  auditedRequests,
  runnerContainerRunning,
  runnerContainerTerminated,
  waitFor,
} from '../../harness';
import { CRD_PATHS } from '../../harness/global-setup';
import {
  ScaleSetFixture,
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
   * The audit log up to now. The log is written in batches, so the test makes one request of its own
   * (a read of a ConfigMap no one else names) and reads until it appears.
   */
  async function auditLogUpToNow(f: ScaleSetFixture): Promise<AuditedRequest[]> {
    const marker = `audit-marker-${Date.now()}`;
    await f.kube.get<V1ConfigMap>(ConfigMapKind, f.namespace, marker).catch((err: unknown) => {
      if (!isNotFound(err)) throw err;
    });
    return waitFor(
      async () => {
        const { requests } = await auditedRequests(cp.info.auditLogPath!);
        return requests.some((r) => r.resource === 'configmaps' && r.name === marker) ? requests : undefined;
      },
      { timeoutMs: 60_000, description: `the audit log to record the read of configmap ${marker}` },
    );
  }

  it('never reads the proxy secret of a set without a proxy, and deletes each finished runner once', async () => {
    const f = await suite.start();
    const name = uniqueName('cost');
    const scaleSetId = await createScaleSetOnService(suite.sim, name);
    await createRunnerSet(f, name, scaleSetId);
    const count = 3;
    await f.scale(name, count, 1);

    // Each runner starts, registers and takes a job, as the kubelet, runner and listener would.
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
    const names = runners.map((r) => r.metadata!.name!);
    const jobs = new Map(
      names.map((runner) => [runner, suite.sim.startJob(runner, { displayName: 'build' })]),
    );
    for (const [runner, job] of jobs) await f.reportJobStarted(runner, job.jobId);
    // The listener's next patch once the jobs are assigned: no runner beyond the busy ones.
    await f.scale(name, 0, 2);

    // The jobs end, the runners exit 0 and are removed.
    for (const [runner, job] of jobs) {
      suite.sim.completeJob(job.jobId, 'succeeded');
      suite.sim.runnerExited(runner, 0);
      await runnerContainerTerminated(f.namespace, runner, 0, { phase: 'Succeeded' });
    }
    await waitForRunners(f, name, (all) => all.length === 0, 'every runner gone');
    await waitFor(async () => (await f.runnerSet(name))?.status?.currentReplicas === 0, {
      description: 'the set counting 0 runners',
    });
    const requests = await auditLogUpToNow(f);

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
    console.log(
      [
        `Runner-set requests for ${count} jobs (audit log):`,
        `  proxy secret reads (no proxy configured): ${proxySecretReads.length}`,
        ...deletesPerRunner.map((r) => `  ${r.runner}: ${r.deletes} delete(s)`),
      ].join('\n'),
    );
    // Each runner's end is in the log (it was deleted), and only once: its own controller deletes it as
    // its job ends, and the set's pass that sees it Succeeded before the deletion skips the request.
    expect(deletesPerRunner.filter((r) => r.deletes !== 1)).toEqual([]);
    expect(proxySecretReads).toEqual([]);
  });
});
