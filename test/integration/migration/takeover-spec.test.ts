import type { V1Pod } from '@kubernetes/client-node';
import {
  AutoscalingRunnerSetKind,
  EphemeralRunner,
  EphemeralRunnerKind,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
} from '@aro/api';
import { MultiClient } from '@aro/actions';
import { KubeClient, type KubeObject, PodKind, isNotFound } from '@aro/kube';
import { DEFAULT_PAT, type RunningSimulator, startSimulator } from '../../../apps/simulator/src';
import { createTestNamespace, testKubeConfig, waitFor } from '../../harness';
import { ListenerPlayer } from '../../harness/listener-player';
import { finishPodDeletion } from '../../harness/pod-lifecycle';
import { RunnerPlayer } from '../../harness/runner-player';
import { type BootedApp, bootControllerApp } from '../controller-app/boot';
import { upstreamSerializedRunnerSpec } from './upstream-serialized';
import { Upstream, type UpstreamLayout, type UpstreamScaleSet, writeUpstreamState } from './upstream-state';

/*
 * Taking over a scale set as upstream really wrote it, and handing it back (docs/migrating.md):
 * - the EphemeralRunnerSet's runner spec is upstream's Go serialization (`metadata: {}`,
 *   `resources: {}`: upstream-serialized.ts), which ARO must read as the spec it renders itself,
 *   keeping the idle runners and their registrations;
 * - the finalizer names are each version's, from upstream's source (upstream-meta.ts): a 0.14.2 set
 *   must not stay Terminating once ARO retires it, and a declared rollback leaves the sets with the one
 *   name the version rolled back to removes.
 */
describe('Takeover by meaning, and the finalizers of the version to go back to', () => {
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

  /** Upstream's listener process: on its pod's deletion it deletes its session, and the pod goes. */
  function playUpstreamListener(state: UpstreamScaleSet): Promise<void> {
    const actions = new MultiClient({ retry: { maxRetries: 0 } }).getClientFor({
      configUrl: sim.configUrl({ org: 'octo' }),
      namespace: state.namespace,
      credentials: { kind: 'pat', token: DEFAULT_PAT },
    });
    return (async () => {
      const uid = (await kube.get<V1Pod>(PodKind, state.controllerNamespace, state.listenerName)).metadata
        ?.uid;
      const seen = await waitFor(
        async () => {
          const pod = await kube
            .get<V1Pod>(PodKind, state.controllerNamespace, state.listenerName)
            .catch((err: unknown) => (isNotFound(err) ? undefined : Promise.reject(err)));
          if (pod?.metadata?.uid !== uid) return 'gone';
          return pod?.metadata?.deletionTimestamp ? 'terminating' : undefined;
        },
        { description: "upstream's listener pod to be deleted", timeoutMs: 120_000, intervalMs: 200 },
      );
      await actions.deleteMessageSession(state.scaleSetId, state.sessionId);
      if (seen === 'terminating') await finishPodDeletion(state.controllerNamespace, state.listenerName);
      await actions.close();
    })();
  }

  const runnerUid = async (namespace: string, name: string) =>
    (await kube.get<EphemeralRunner>(EphemeralRunnerKind, namespace, name)).metadata?.uid;

  async function takeOver(
    layout: UpstreamLayout,
    arsName: string,
    env: Record<string, string>,
  ): Promise<UpstreamScaleSet & { uids: Map<string, string | undefined> }> {
    const namespace = await createTestNamespace('takeover-spec');
    const controllerNamespace = await createTestNamespace('takeover-spec-system');
    const state = await writeUpstreamState(kube, sim, {
      namespace,
      controllerNamespace,
      arsName,
      busy: 0,
      idle: 2,
      minRunners: 2,
      maxRunners: 5,
      layout,
    });
    // Each runner's uid before ARO starts: a runner replaced under the same name would show a new one.
    const uids = new Map(
      await Promise.all(
        state.idleRunners.map(async (r) => [r.runner, await runnerUid(namespace, r.runner)] as const),
      ),
    );
    // Idle runners wait for a job for the whole test, as real ones do until they get one.
    const runners = new RunnerPlayer({
      kubeConfig: testKubeConfig(),
      namespace,
      service: sim,
      jobDurationMs: 1_000,
      jobWaitTimeoutMs: 600_000,
    }).start();
    stops.push(() => runners.stop());
    const upstreamListenerStopped = playUpstreamListener(state);
    sim.resetCallCounts();
    app = await bootControllerApp({
      WATCH_NAMESPACE: namespace,
      POD_NAMESPACE: controllerNamespace,
      LEADER_ELECTION: 'false',
      CONTROLLER_MANAGER_CONTAINER_IMAGE: 'aro:test',
      ...env,
    });
    await upstreamListenerStopped;
    const listeners = ListenerPlayer.start({ namespace: controllerNamespace });
    stops.push(() => listeners.stop());
    // ARO creates its listener only once the runner spec it renders matches the set's (or was rolled
    // out): its session is the proof the AutoscalingRunnerSet controller compared them.
    await waitFor(
      () => sim.sessions().some((s) => s.scaleSetId === state.scaleSetId && s.sessionId !== state.sessionId),
      { description: "ARO's listener to open its session on the same scale set", timeoutMs: 120_000 },
    );
    return { ...state, uids };
  }

  it("adopts a set with upstream's serialized runner spec without replacing its idle runners, and a declared rollback to 0.14.2 leaves it the name 0.14.2 removes", async () => {
    const state = await takeOver('head', 'arc-serialized', { UPSTREAM_COMPATIBILITY: 'main' });
    const { namespace, arsName, scaleSetId } = state;
    const { uids } = state;
    const idleNames = state.idleRunners.map((r) => r.runner);
    // What upstream wrote, and the set still has if ARO left it alone.
    const upstreamSpec = upstreamSerializedRunnerSpec({
      githubConfigUrl: sim.configUrl({ org: 'octo' }),
      githubConfigSecret: state.chartSecret,
      runnerScaleSetId: scaleSetId,
      serviceAccountName: state.chartServiceAccount,
    });

    // The set was adopted (ARO's own hash stored) and its runner spec left as upstream wrote it.
    const ers = await waitFor(
      async () => {
        const set = await kube.get<EphemeralRunnerSet>(EphemeralRunnerSetKind, namespace, arsName);
        const adopted = /^[0-9a-f]{16}$/.test(set.metadata?.annotations?.[Upstream.integrityHash] ?? '');
        return adopted ? set : undefined;
      },
      { description: 'ARO to adopt the EphemeralRunnerSet', timeoutMs: 60_000 },
    );
    expect(ers.spec.ephemeralRunnerSpec).toEqual(upstreamSpec);
    expect(ers.spec.ephemeralRunnerSpec.spec?.containers[0]).toHaveProperty('resources', {});
    // Both idle runners are the ones upstream made, still registered; nothing was registered again.
    for (const name of idleNames) {
      const er = await kube.get<EphemeralRunner>(EphemeralRunnerKind, namespace, name);
      expect({ uid: er.metadata?.uid, deleting: er.metadata?.deletionTimestamp }).toEqual({
        uid: uids.get(name),
        deleting: undefined,
      });
    }
    expect(
      sim
        .registrations({ scaleSetId })
        .map((r) => r.id)
        .sort(),
    ).toEqual(state.idleRunners.map((r) => r.runnerId).sort());
    expect(sim.callCount('POST runnerscalesets/{id}/generatejitconfig')).toBe(0);
    expect(sim.callCount('DELETE agents/{id}')).toBe(0);

    // They serve: two new jobs run on them.
    const jobs = [sim.enqueueJob({ scaleSetId }), sim.enqueueJob({ scaleSetId })];
    await waitFor(() => jobs.every((j) => sim.job(j.jobId)?.state === 'completed'), {
      description: 'the new jobs to complete',
      timeoutMs: 120_000,
    });
    expect(jobs.map((j) => sim.job(j.jobId)?.runnerName).sort()).toEqual([...idleNames].sort());

    // ---- a declared rollback to 0.14.2: ARO runs once with the value set ----
    await app?.close();
    app = await bootControllerApp({
      WATCH_NAMESPACE: namespace,
      POD_NAMESPACE: state.controllerNamespace,
      LEADER_ELECTION: 'false',
      CONTROLLER_MANAGER_CONTAINER_IMAGE: 'aro:test',
      UPSTREAM_COMPATIBILITY: '0.14.2',
    });
    await waitFor(
      async () =>
        (
          await kube.get<EphemeralRunnerSet>(EphemeralRunnerSetKind, namespace, arsName)
        ).metadata?.finalizers?.join() === Upstream.ersFinalizer0142,
      { description: "the set to carry 0.14.2's finalizer name, and only it", timeoutMs: 60_000 },
    );
    await app.close();
    app = undefined;

    // 0.14.2's controller deletes the set it does not recognise and, once its runners are gone, removes
    // its own finalizer name and no other (ephemeralrunnerset_controller.go at 0.14.2): the set goes.
    await kube.delete(EphemeralRunnerSetKind, namespace, arsName);
    const deleting = await kube.get<EphemeralRunnerSet>(EphemeralRunnerSetKind, namespace, arsName);
    await kube.mergePatch(EphemeralRunnerSetKind, namespace, arsName, {
      metadata: {
        finalizers: (deleting.metadata?.finalizers ?? []).filter((f) => f !== Upstream.ersFinalizer0142),
        resourceVersion: deleting.metadata?.resourceVersion,
      },
    });
    await waitFor(() => gone(EphemeralRunnerSetKind, namespace, arsName), {
      description: "the set to go once 0.14.2's finalizer is removed",
      timeoutMs: 30_000,
    });
  });

  it("serves a 0.14.2 install from 0.14.2's own set, keeping its idle runners, and its uninstall releases that set", async () => {
    // Upstream 0.14 names its set `<scale set>-<random>` (and stamps no integrity hash on it). Creating
    // a set of ARO's own beside it would retire that one: its idle runners deregistered at once.
    const state = await takeOver('0.14', 'arc-release', { UPSTREAM_COMPATIBILITY: 'main' });
    const { namespace, arsName, scaleSetId, uids } = state;
    const idleNames = state.idleRunners.map((r) => r.runner);
    const ers = await waitFor(
      async () => {
        const set = await kube.get<EphemeralRunnerSet>(EphemeralRunnerSetKind, namespace, state.ersName);
        const adopted = /^[0-9a-f]{16}$/.test(set.metadata?.annotations?.[Upstream.integrityHash] ?? '');
        return adopted ? set : undefined;
      },
      { description: `ARO to adopt 0.14.2's EphemeralRunnerSet ${state.ersName}`, timeoutMs: 60_000 },
    );
    expect(ers.metadata?.deletionTimestamp).toBeUndefined();
    // Upstream's own hash stays beside ARO's: 0.14.2, rolled back to, recognises its set by it.
    expect(ers.metadata?.annotations?.['actions.github.com/runner-spec-hash']).toBe('z5q8c4w6m9');
    expect(await gone(EphemeralRunnerSetKind, namespace, arsName)).toBe(true);
    for (const name of idleNames) {
      const er = await kube.get<EphemeralRunner>(EphemeralRunnerKind, namespace, name);
      expect({ uid: er.metadata?.uid, deleting: er.metadata?.deletionTimestamp }).toEqual({
        uid: uids.get(name),
        deleting: undefined,
      });
    }
    expect(sim.callCount('DELETE agents/{id}')).toBe(0);
    expect(sim.callCount('POST runnerscalesets/{id}/generatejitconfig')).toBe(0);

    // They serve: a new job runs on one of them.
    const job = sim.enqueueJob({ scaleSetId });
    await waitFor(() => sim.job(job.jobId)?.state === 'completed', {
      description: 'a new job to complete under ARO',
      timeoutMs: 120_000,
    });
    expect(idleNames).toContain(sim.job(job.jobId)?.runnerName);

    // Its finalizer is now the name of the version ARO was told to stay compatible with (main), and
    // the uninstall releases the set under it: not left Terminating.
    expect(ers.metadata?.finalizers).toEqual([Upstream.ersFinalizer]);
    await kube.delete(AutoscalingRunnerSetKind, namespace, arsName);
    await waitFor(
      async () =>
        (await gone(AutoscalingRunnerSetKind, namespace, arsName)) &&
        (await gone(EphemeralRunnerSetKind, namespace, state.ersName)),
      { description: 'the scale set and its 0.14.2 set gone', timeoutMs: 60_000 },
    );
    expect(sim.registrations({ scaleSetId })).toEqual([]);
  });

  async function gone(kind: Parameters<KubeClient['get']>[0], namespace: string, name: string) {
    try {
      await kube.get<KubeObject>(kind, namespace, name);
      return false;
    } catch (err) {
      if (isNotFound(err)) return true;
      throw err;
    }
  }
});
