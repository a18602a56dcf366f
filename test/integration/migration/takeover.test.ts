import type { V1Pod } from '@kubernetes/client-node';
import {
  AutoscalingListener,
  AutoscalingListenerKind,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  EphemeralRunner,
  EphemeralRunnerKind,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
} from '@aro/api';
import { MultiClient } from '@aro/actions';
import {
  KubeClient,
  type KubeObject,
  PodKind,
  RoleBindingKind,
  RoleKind,
  SecretKind,
  ServiceAccountKind,
  isNotFound,
} from '@aro/kube';
import type { ResourceKind } from '@aro/api';
import {
  DEFAULT_PAT,
  type JobView,
  type RunningSimulator,
  startSimulator,
} from '../../../apps/simulator/src';
import { createTestNamespace, testKubeConfig, waitFor } from '../../harness';
import { ListenerPlayer } from '../../harness/listener-player';
import { RunnerPlayer } from '../../harness/runner-player';
import { type BootedApp, bootControllerApp } from '../controller-app/boot';
import {
  Upstream,
  type UpstreamLayout,
  type UpstreamScaleSet,
  upstreamKeepsVersion,
  writeUpstreamState,
} from './upstream-state';
import { type PlayedListenerPod, playUpstreamListenerPod } from './upstream-listener';

/*
 * In-place takeover (docs/migrating.md): a cluster where upstream's controller ran a scale set with
 * jobs in flight; upstream's controller is gone (its Deployment uninstalled: only its objects remain,
 * and its listener pod, which goes on until something deletes it); ARO's controller starts on it.
 * The test plays the kubelet (runner pods, the old listener pod) and the runners, and runs ARO's own
 * listener for the listener pods ARO creates.
 */
describe('Taking over a scale set from upstream in place', () => {
  jest.setTimeout(600_000);
  let sim: RunningSimulator;
  let kube: KubeClient;
  let app: BootedApp | undefined;
  const stops: Array<() => unknown> = [];

  beforeAll(async () => {
    sim = await startSimulator({
      seed: { timing: { longPollTimeoutMs: 2_000, autoStartJobs: true, sessionIdleTimeoutMs: 10_000 } },
    });
    kube = new KubeClient(testKubeConfig());
  });
  afterEach(async () => {
    for (const stop of stops.splice(0).reverse()) await stop();
    await app?.close();
    app = undefined;
  });
  afterAll(async () => {
    kube?.close();
    await sim?.stop();
  });

  /** Upstream's listener pod and its process (see playUpstreamListenerPod), on the suite's simulator. */
  function playUpstreamListener(state: UpstreamScaleSet): PlayedListenerPod {
    const actions = new MultiClient({ retry: { maxRetries: 0 } }).getClientFor({
      configUrl: sim.configUrl({ org: 'octo' }),
      namespace: state.namespace,
      credentials: { kind: 'pat', token: DEFAULT_PAT },
    });
    const played = playUpstreamListenerPod(kube, actions, {
      namespace: state.controllerNamespace,
      name: state.listenerName,
      scaleSetId: state.scaleSetId,
      sessionId: state.sessionId,
    });
    return { stopped: played.stopped.finally(() => actions.close()), stop: () => played.stop() };
  }

  async function gone(kind: ResourceKind, namespace: string, name: string): Promise<boolean> {
    try {
      await kube.get<KubeObject>(kind, namespace, name);
      return false;
    } catch (err) {
      if (isNotFound(err)) return true;
      throw err;
    }
  }

  it.each<[UpstreamLayout, string]>([
    ['head', 'arc-runners'],
    ['0.14', 'arc-legacy'],
  ])(
    'from upstream %s: every running job finishes on its runner, the scale set and registrations are adopted, new jobs run, nothing leaks',
    async (layout, arsName) => {
      const namespace = await createTestNamespace('takeover');
      const controllerNamespace = await createTestNamespace('takeover-system');
      const state = await writeUpstreamState(kube, sim, {
        namespace,
        controllerNamespace,
        arsName,
        busy: 2,
        maxRunners: 5,
        layout,
      });
      const upstreamRunners = new Set([...state.busy.map((b) => b.runner), state.idle.runner]);
      const busyRunnerUids = new Map(
        await Promise.all(
          state.busy.map(
            async (b) =>
              [
                b.runner,
                (await kube.get<EphemeralRunner>(EphemeralRunnerKind, namespace, b.runner)).metadata?.uid,
              ] as const,
          ),
        ),
      );
      const oldListenerPod = await kube.get<V1Pod>(PodKind, controllerNamespace, state.listenerName);

      // The runners go on running their jobs through the takeover (4 s more each).
      const runners = new RunnerPlayer({
        kubeConfig: testKubeConfig(),
        namespace,
        service: sim,
        jobDurationMs: 4_000,
        jobWaitTimeoutMs: 600_000,
      }).start();
      stops.push(() => runners.stop());
      const upstreamListener = playUpstreamListener(state);
      stops.push(() => upstreamListener.stop());

      // ---- ARO's controller starts (docs/migrating.md, step 3) ----
      sim.resetCallCounts();
      app = await bootControllerApp({
        WATCH_NAMESPACE: namespace,
        POD_NAMESPACE: controllerNamespace,
        LEADER_ELECTION: 'false',
        CONTROLLER_MANAGER_CONTAINER_IMAGE: 'aro:test',
        // The version this cluster came from is the one it can go back to (docs/migrating.md).
        UPSTREAM_COMPATIBILITY: layout === 'head' ? 'main' : '0.14.2',
      });

      // It replaces upstream's listener (its pod deleted, its session closed) with its own.
      await upstreamListener.stopped;
      const listeners = ListenerPlayer.start({ namespace: controllerNamespace });
      stops.push(() => listeners.stop());
      await waitFor(
        () =>
          sim.sessions().some((s) => s.scaleSetId === state.scaleSetId && s.sessionId !== state.sessionId),
        { description: "ARO's listener to open its session on the same scale set", timeoutMs: 120_000 },
      );
      const newListenerPod = await kube.get<V1Pod>(PodKind, controllerNamespace, state.listenerName);
      expect(newListenerPod.metadata?.uid).not.toBe(oldListenerPod.metadata?.uid);
      expect(newListenerPod.spec?.containers[0].image).toBe('aro:test');

      // Every job that was running finishes, once, on the runner upstream gave it.
      await waitFor(() => state.busy.every((b) => sim.job(b.jobId)?.state === 'completed'), {
        description: 'the jobs in flight at the takeover to complete',
        timeoutMs: 120_000,
      });
      for (const b of state.busy) {
        const job = sim.job(b.jobId)!;
        expect({ runner: job.runnerName, result: job.result, starts: job.startAttempts }).toEqual({
          runner: b.runner,
          result: 'succeeded',
          starts: 1,
        });
      }
      await waitFor(() => state.busy.every((b) => runners.outcomes.get(b.runner) === 'succeeded'), {
        description: 'each busy runner to exit 0 after its job, its pod never deleted under it',
        timeoutMs: 60_000,
      });
      // Not recreated: the busy runners' EphemeralRunners kept their uid until they were done with.
      for (const b of state.busy) {
        const er = await kube
          .get<EphemeralRunner>(EphemeralRunnerKind, namespace, b.runner)
          .catch(() => undefined);
        if (er) expect(er.metadata?.uid).toBe(busyRunnerUids.get(b.runner));
      }

      // Adopted: no scale set created, the scale set id unchanged; upstream's set adopted as it is
      // (HEAD's named after the scale set, 0.14's `<set>-<random>`), so no runner registered either.
      expect(sim.callCount('POST runnerscalesets')).toBe(0);
      expect(sim.callCount('POST runnerscalesets/{id}/generatejitconfig')).toBe(0);
      expect(
        sim
          .scaleSets()
          .filter((s) => s.name === state.arsName)
          .map((s) => s.id),
      ).toEqual([state.scaleSetId]);
      const ars = await kube.get<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, namespace, state.arsName);
      expect(ars.metadata?.annotations?.[Upstream.scaleSetIdAnnotation]).toBe(String(state.scaleSetId));
      expect([...runners.outcomes.keys()].every((name) => upstreamRunners.has(name))).toBe(true);
      // The set that serves the scale set is upstream's own, whatever its name: no second one beside it.
      const servingSet = state.ersName;
      expect(
        (await kube.list<EphemeralRunnerSet>(EphemeralRunnerSetKind, { namespace })).map((x) => ({
          name: x.metadata?.name,
          deleting: x.metadata?.deletionTimestamp,
        })),
      ).toEqual([{ name: servingSet, deleting: undefined }]);

      // ---- new jobs run under ARO ----
      const jobs: JobView[] = Array.from({ length: 3 }, () =>
        sim.enqueueJob({ scaleSetId: state.scaleSetId }),
      );
      // The runners ARO creates, as they are while they live (they are gone once their job is done).
      const created = new Map<string, EphemeralRunner>();
      await waitFor(
        async () => {
          for (const er of await kube.list<EphemeralRunner>(EphemeralRunnerKind, { namespace })) {
            if (!upstreamRunners.has(er.metadata?.name ?? '')) created.set(er.metadata?.name ?? '', er);
          }
          return jobs.every((j) => sim.job(j.jobId)?.state === 'completed');
        },
        {
          description: 'the new jobs to complete on runners ARO created',
          timeoutMs: 180_000,
          intervalMs: 200,
        },
      );
      const done = jobs.map((j) => sim.job(j.jobId)!);
      expect(done.filter((j) => j.result !== 'succeeded')).toEqual([]);
      expect(done.filter((j) => upstreamRunners.has(j.runnerName ?? ''))).toEqual([]);
      expect(new Set(done.map((j) => j.runnerName)).size).toBe(jobs.length);
      expect(runners.errors).toEqual([]);

      // ---- the reverse: what ARO leaves is what upstream's controller would keep ----
      const arsNow = await kube.get<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, namespace, state.arsName);
      expect(arsNow.metadata?.finalizers).toContain(Upstream.arsFinalizer);
      expect(upstreamKeepsVersion(arsNow.metadata?.labels?.[Upstream.versionLabel])).toBe(true);
      expect(arsNow.metadata?.annotations).toMatchObject({
        [Upstream.scaleSetIdAnnotation]: String(state.scaleSetId),
        [Upstream.scaleSetNameAnnotation]: state.arsName,
        [Upstream.runnerGroupAnnotation]: 'Default',
      });
      // Upstream looks its EphemeralRunnerSet up by owner (0.14) or by the ARS's name (HEAD), its
      // listener by scaleSetListenerName.
      // The set carries the one finalizer name that version removes (any other would keep it Terminating).
      const ers = await kube.get<EphemeralRunnerSet>(EphemeralRunnerSetKind, namespace, servingSet);
      expect(ers.metadata?.finalizers).toEqual([
        layout === 'head' ? Upstream.ersFinalizer : Upstream.ersFinalizer0142,
      ]);
      expect(ers.metadata?.ownerReferences?.[0]).toMatchObject({
        kind: 'AutoscalingRunnerSet',
        controller: true,
      });
      // Runners as upstream's EphemeralRunnerSet controller counts and cleans them up: both finalizers,
      // the patch they were made for, owned by the set.
      expect(created.size).toBeGreaterThanOrEqual(jobs.length);
      for (const er of created.values()) {
        expect(er.metadata?.finalizers).toEqual(
          expect.arrayContaining([Upstream.erFinalizer, Upstream.erRegistrationFinalizer]),
        );
        expect(er.metadata?.annotations?.[Upstream.patchIdAnnotation]).toMatch(/^\d+$/);
        expect(er.metadata?.ownerReferences?.[0]).toMatchObject({
          kind: 'EphemeralRunnerSet',
          name: servingSet,
          controller: true,
        });
      }
      const listener = await kube.get<AutoscalingListener>(
        AutoscalingListenerKind,
        controllerNamespace,
        state.listenerName,
      );
      expect(listener.metadata?.finalizers).toContain(Upstream.listenerFinalizer);
      expect(listener.spec.runnerScaleSetId).toBe(state.scaleSetId);

      // Scaled back to 0, then the scale set's release is uninstalled: ARO's finalizers clean up all of it.
      await waitFor(
        async () => (await kube.list<EphemeralRunner>(EphemeralRunnerKind, { namespace })).length === 0,
        { description: 'the runner set scaled back to 0', timeoutMs: 120_000 },
      );
      for (const [kind, name] of [
        [AutoscalingRunnerSetKind, state.arsName],
        [SecretKind, state.chartSecret],
        [ServiceAccountKind, state.chartServiceAccount],
        [RoleKind, state.managerRole],
        [RoleBindingKind, state.managerRole],
      ] as const) {
        await kube.delete(kind, namespace, name);
      }
      await waitFor(
        async () => {
          const checks = await Promise.all([
            gone(AutoscalingRunnerSetKind, namespace, state.arsName),
            gone(EphemeralRunnerSetKind, namespace, servingSet),
            gone(AutoscalingListenerKind, controllerNamespace, state.listenerName),
            gone(PodKind, controllerNamespace, state.listenerName),
            gone(SecretKind, controllerNamespace, `${state.listenerName}-config`),
            gone(ServiceAccountKind, controllerNamespace, state.listenerName),
            gone(RoleKind, namespace, state.listenerName),
            gone(RoleBindingKind, namespace, state.listenerName),
            gone(SecretKind, namespace, state.chartSecret),
            gone(ServiceAccountKind, namespace, state.chartServiceAccount),
            gone(RoleKind, namespace, state.managerRole),
            gone(RoleBindingKind, namespace, state.managerRole),
          ]);
          return checks.every(Boolean);
        },
        { description: 'everything of the scale set gone', timeoutMs: 120_000 },
      );
      // A deleted runner's pod goes once the kubelet (the runner player) has stopped it.
      await waitFor(async () => (await kube.list<V1Pod>(PodKind, { namespace })).length === 0, {
        description: 'every runner pod gone',
        timeoutMs: 60_000,
      }).catch(async (err: unknown) => {
        const left = (await kube.list<V1Pod>(PodKind, { namespace })).map(
          (pod) =>
            `${pod.metadata?.name} ${pod.status?.phase} deleting=${pod.metadata?.deletionTimestamp ?? '-'} ` +
            `player=${runners.outcomes.get(pod.metadata?.name ?? '') ?? 'playing'}`,
        );
        throw new Error(`${(err as Error).message}\npods left: ${left.join('; ')}`, { cause: err });
      });
      expect(sim.registrations({ scaleSetId: state.scaleSetId })).toEqual([]);
      expect(sim.sessions().filter((s) => s.scaleSetId === state.scaleSetId)).toEqual([]);
      expect(sim.scaleSet(state.scaleSetId)).toBeUndefined();
    },
  );
});
