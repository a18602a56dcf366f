import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import { AutoscalingRunnerSet, AutoscalingRunnerSetKind } from '@aro/api';
import { EventKind } from '@aro/kube';
import { RUNNERS_HEALTHY_CONDITION } from '@aro/controllers';
import { runnerContainerRunning, setPodStatus, waitFor } from '../../harness';
import {
  GITHUB_SECRET,
  ScaleSetFixture,
  createRunnerSet,
  createScaleSetOnService,
  live,
  runnerPod,
  runnerPodTemplate,
  scaleSetSuite,
  uniqueName,
} from './fixture';

jest.setTimeout(180_000);

/**
 * What a set shows when its runners do not start (the start watchdog on the EphemeralRunner controller,
 * RunnersHealthy on the set): the whole app graph, with the test as kubelet.
 */
describe('EphemeralRunnerSet with runners that never start', () => {
  const suite = scaleSetSuite();
  let f: ScaleSetFixture;

  const invalidImage = (pod: V1Pod) => ({
    phase: 'Pending',
    conditions: [{ type: 'PodScheduled', status: 'True', lastTransitionTime: new Date() }],
    containerStatuses: pod.spec!.containers.map((c) => ({
      name: c.name,
      image: c.image ?? '',
      imageID: '',
      ready: false,
      restartCount: 0,
      state: {
        waiting: { reason: 'InvalidImageName', message: `couldn't parse image name "${c.image}"` },
      },
    })),
  });

  it('fails each runner whose pod reports InvalidImageName, replaces it after backoff, and names the reason and count in RunnersHealthy until a runner comes up', async () => {
    f = await suite.start({ runnerSet: { failedRunnerBackoffBaseMs: 500, failedRunnerBackoffMaxMs: 2_000 } });
    const name = uniqueName('ers-start');
    await createRunnerSet(f, name, await createScaleSetOnService(suite.sim, name));
    await f.scale(name, 2, 1);

    // The kubelet refuses the image of every runner pod it is given, until three runners have failed.
    const refused = new Set<string>();
    const set = await waitFor(
      async () => {
        for (const runner of live(await f.runners(name))) {
          const pod = await runnerPod(f, runner.metadata!.name!);
          const uid = pod?.metadata?.uid;
          if (!pod || !uid || refused.has(uid)) continue;
          refused.add(uid);
          await setPodStatus(f.namespace, pod.metadata!.name!, invalidImage).catch(() => refused.delete(uid));
        }
        const s = await f.runnerSet(name);
        const c = s?.status?.conditions?.find((x) => x.type === RUNNERS_HEALTHY_CONDITION);
        return c?.status === 'False' && /^[3-9] runners failed/.test(c.message ?? '') ? s : undefined;
      },
      { timeoutMs: 60_000, description: 'RunnersHealthy False after three failed runners' },
    );
    const condition = set.status!.conditions!.find((c) => c.type === RUNNERS_HEALTHY_CONDITION)!;
    expect(condition).toMatchObject({ status: 'False', reason: 'InvalidImageName' });
    expect(condition.message).toMatch(/runners failed with InvalidImageName .*couldn't parse image name/);
    // Each failed runner was deleted by the set with a Warning naming the kubelet's reason.
    const events = await f.list<CoreV1Event>(EventKind);
    expect(
      events.filter(
        (e) =>
          e.reason === 'RunnerFailed' &&
          e.involvedObject?.name === name &&
          e.message?.includes('InvalidImageName'),
      ).length,
    ).toBeGreaterThan(0);
    // The failed runners hold no slot: the set keeps at most its 2 replicas, none of them Failed.
    expect(live(await f.runners(name)).length).toBeLessThanOrEqual(2);

    // The image is fixed (the kubelet starts what it is given): RunnersHealthy turns True.
    const healthy = await waitFor(
      async () => {
        for (const runner of live(await f.runners(name))) {
          const pod = await runnerPod(f, runner.metadata!.name!);
          if (pod && !refused.has(pod.metadata!.uid!) && pod.status?.phase !== 'Running') {
            await runnerContainerRunning(f.namespace, pod.metadata!.name!).catch(() => undefined);
          }
        }
        const c = (await f.runnerSet(name))?.status?.conditions?.find(
          (x) => x.type === RUNNERS_HEALTHY_CONDITION,
        );
        return c?.status === 'True' ? c : undefined;
      },
      { timeoutMs: 60_000, description: 'RunnersHealthy True once a runner is ready' },
    );
    expect(healthy.reason).toBe('RunnerReady');
  });

  it('shows RunnersHealthy on the AutoscalingRunnerSet too, so kubectl describe ars names what to fix', async () => {
    f = await suite.start({ runnerSet: { failedRunnerBackoffBaseMs: 500, failedRunnerBackoffMaxMs: 2_000 } });
    const name = uniqueName('ars-start');
    await f.kube.create<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, {
      apiVersion: 'actions.github.com/v1alpha1',
      kind: 'AutoscalingRunnerSet',
      metadata: { name, namespace: f.namespace },
      spec: {
        githubConfigUrl: f.configUrl,
        githubConfigSecret: GITHUB_SECRET,
        maxRunners: 2,
        minRunners: 0,
        template: { spec: runnerPodTemplate() },
      },
    });
    await waitFor(async () => (await f.runnerSet(name)) !== undefined, {
      description: 'its EphemeralRunnerSet',
    });
    await f.scale(name, 1, 1);
    const refused = new Set<string>();
    const condition = await waitFor(
      async () => {
        for (const runner of live(await f.runners(name))) {
          const pod = await runnerPod(f, runner.metadata!.name!);
          const uid = pod?.metadata?.uid;
          if (!pod || !uid || refused.has(uid)) continue;
          refused.add(uid);
          await setPodStatus(f.namespace, pod.metadata!.name!, invalidImage).catch(() => refused.delete(uid));
        }
        const ars = await f.read<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, name);
        return ars?.status?.conditions?.find(
          (c) => c.type === RUNNERS_HEALTHY_CONDITION && c.status === 'False',
        );
      },
      { timeoutMs: 60_000, description: 'RunnersHealthy False on the AutoscalingRunnerSet' },
    );
    expect(condition.reason).toBe('InvalidImageName');
    expect(condition.message).toMatch(/runners? failed with InvalidImageName/);
  });
});
