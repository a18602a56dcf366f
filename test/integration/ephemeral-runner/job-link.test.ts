import type { V1Pod } from '@kubernetes/client-node';
import { type EphemeralRunner, EphemeralRunnerKind } from '@aro/api';
import { BUSY_RUNNER_LABEL, JobLinkKeys } from '@aro/controllers';
import { PodKind } from '@aro/kube';
import type { JobView } from '../../../apps/simulator/src';
import { runnerContainerRunning, runnerContainerTerminated } from '../../harness';
import { ControllerFixture, controllerSuite } from './fixture';

/**
 * Which job a pod runs (libs/controllers/src/ephemeral-runner/job-link.ts): once the listener records
 * the job, the runner's pod and EphemeralRunner carry its repository, workflow, run and job, as labels a
 * selector finds, or annotations where the value is no label value.
 */
describe('EphemeralRunner job link', () => {
  const suite = controllerSuite();
  let f: ControllerFixture;

  async function idleRunner(name: string): Promise<void> {
    await f.createRunner(name);
    await f.waitForPod(name, (p) => p !== undefined, 'the runner pod');
    await runnerContainerRunning(f.namespace, name);
    await f.waitForRunner(name, (r) => r?.status?.phase === 'Pending', 'phase Pending');
  }

  /** The service starts the job; the listener records it on the runner (its job-bookkeeping patch). */
  async function startJob(name: string, repo: string, workflow: string): Promise<JobView> {
    const job = suite.sim.startJob(name, {
      repo,
      workflowRef: `${repo}/.github/workflows/${workflow}@refs/heads/main`,
      displayName: 'build',
    });
    await f.kube.mergePatchStatus(EphemeralRunnerKind, f.namespace, name, {
      status: {
        jobRequestId: job.runnerRequestId,
        jobRepositoryName: job.repo,
        jobId: job.jobId,
        workflowRunId: job.workflowRunId,
        jobWorkflowRef: job.workflowRef,
        jobDisplayName: job.displayName,
      },
    });
    return job;
  }

  const linked = (o: V1Pod | EphemeralRunner | undefined) =>
    o?.metadata?.labels?.[JobLinkKeys.jobId] !== undefined ||
    o?.metadata?.annotations?.[JobLinkKeys.jobId] !== undefined;

  it('labels the pod and the runner with the job while it runs; a repository name no label can hold goes to an annotation', async () => {
    f = await suite.start({ config: { evictionProtection: true } });
    await idleRunner('link-a');
    await idleRunner('link-b');
    const a = await startJob('link-a', 'octo/hello-world', 'ci.yml');
    // `.github` is a real repository name (an organization's defaults) and no label value.
    const b = await startJob('link-b', 'octo/.github', 'lint.yaml');

    const podA = await f.waitForPod('link-a', linked, 'the job link on the pod');
    const podB = await f.waitForPod('link-b', linked, 'the job link on the pod');
    const runnerA = await f.waitForRunner('link-a', linked, 'the job link on the runner');
    const runnerB = await f.waitForRunner('link-b', linked, 'the job link on the runner');

    for (const [obj, job] of [
      [podA, a],
      [runnerA, a],
    ] as const) {
      expect(obj?.metadata?.labels).toMatchObject({
        [JobLinkKeys.organization]: 'octo',
        [JobLinkKeys.repository]: 'hello-world',
        [JobLinkKeys.workflow]: 'ci',
        [JobLinkKeys.workflowRunId]: String(job.workflowRunId),
        [JobLinkKeys.jobId]: job.jobId,
      });
      expect(obj?.metadata?.annotations?.[JobLinkKeys.workflowRef]).toBe(job.workflowRef);
    }
    for (const obj of [podB, runnerB]) {
      expect(obj?.metadata?.labels?.[JobLinkKeys.repository]).toBeUndefined();
      expect(obj?.metadata?.annotations?.[JobLinkKeys.repository]).toBe('.github');
      expect(obj?.metadata?.labels?.[JobLinkKeys.jobId]).toBe(b.jobId);
      expect(obj?.metadata?.labels?.[JobLinkKeys.workflow]).toBe('lint');
    }
    // The link rode the busy patch: the pod is protected by the same write.
    expect(podA?.metadata?.labels?.[BUSY_RUNNER_LABEL]).toBe('true');

    // What a person on call types: the pods and runners of one repository's jobs, by selector.
    const selector = `${JobLinkKeys.repository}=hello-world`;
    const pods = await f.kube.list<V1Pod>(PodKind, { namespace: f.namespace, labelSelector: selector });
    expect(pods.map((p) => p.metadata?.name)).toEqual(['link-a']);
    const runners = await f.kube.list<EphemeralRunner>(EphemeralRunnerKind, {
      namespace: f.namespace,
      labelSelector: `${JobLinkKeys.workflowRunId}=${a.workflowRunId}`,
    });
    expect(runners.map((r) => r.metadata?.name)).toEqual(['link-a']);

    for (const job of [a, b]) {
      const name = job.runnerName ?? '';
      suite.sim.completeJob(job.jobId, 'succeeded');
      suite.sim.runnerExited(name, 0);
      await runnerContainerTerminated(f.namespace, name, 0, { phase: 'Succeeded' });
      await f.waitForRunner(name, (r) => r === undefined, 'the runner done and deleted');
    }
  });

  it('links the pod without the busy marks when eviction protection is off', async () => {
    f = await suite.start({ config: { evictionProtection: false } });
    await idleRunner('link-off');
    const job = await startJob('link-off', 'octo/hello', 'ci.yml');
    const pod = await f.waitForPod('link-off', linked, 'the job link on the pod');
    expect(pod?.metadata?.labels?.[JobLinkKeys.jobId]).toBe(job.jobId);
    expect(pod?.metadata?.labels?.[BUSY_RUNNER_LABEL]).toBeUndefined();
    suite.sim.completeJob(job.jobId, 'succeeded');
    suite.sim.runnerExited('link-off', 0);
    await runnerContainerTerminated(f.namespace, 'link-off', 0, { phase: 'Succeeded' });
    await f.waitForRunner('link-off', (r) => r === undefined, 'the runner done and deleted');
  });
});
