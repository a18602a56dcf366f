import {
  Annotations,
  EPHEMERAL_RUNNER_SET_FINALIZER,
  EphemeralRunner,
  EphemeralRunnerKind,
  EphemeralRunnerPhase,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
  integrityHash,
} from '@aro/api';
import type { ActionsServiceClient } from '@aro/actions';
import { FakeKubeClient } from '@aro/kube/testing';
import { silentLogger } from '@aro/observability';
import type { SecretResolver } from '@aro/secrets';
import { EphemeralRunnerSetReconciler } from './ephemeral-runner-set.reconciler';

/*
 * The listener's patch protocol, on a fake API server and a fake Actions service: what a pass does with
 * the runners it finds, asserted on the runners left in the store and the registrations left in the
 * service.
 */

const NS = 'team-a';
const SET = 'arc-runners';
const T0 = Date.UTC(2026, 0, 1);

/** The registrations the service holds, by runner ID; removing one is what lets a runner go. */
class FakeActions {
  readonly registered = new Set<number>();
  async removeRunner(id: number): Promise<void> {
    this.registered.delete(id);
  }
}

function setup() {
  const clock = { now: T0 };
  const kube = new FakeKubeClient(() => clock.now);
  const actions = new FakeActions();
  const resolver = { getActionsClient: async () => actions as unknown as ActionsServiceClient };
  const reconciler = new EphemeralRunnerSetReconciler({
    client: kube,
    cache: kube,
    resolver: resolver as unknown as SecretResolver,
    logger: silentLogger,
    now: () => clock.now,
  });
  const ephemeralRunnerSpec = {
    githubConfigUrl: 'https://github.com/octo',
    githubConfigSecret: 'gh',
    runnerScaleSetId: 7,
    spec: { containers: [{ name: 'runner', image: 'runner' }] },
  };
  const set = kube.seed<EphemeralRunnerSet>(EphemeralRunnerSetKind, {
    apiVersion: 'actions.github.com/v1alpha1',
    kind: 'EphemeralRunnerSet',
    metadata: {
      namespace: NS,
      name: SET,
      finalizers: [EPHEMERAL_RUNNER_SET_FINALIZER],
      annotations: { [Annotations.integrityHash]: integrityHash(ephemeralRunnerSpec) },
    },
    spec: { replicas: 0, patchID: 0, ephemeralRunnerSpec },
  } as EphemeralRunnerSet);

  let nextRunnerId = 100;
  /** A runner of the set as the EphemeralRunner controller leaves it: registered, in `phase`. */
  const runner = (name: string, phase: string, patchId: number, ageMinutes = 0): EphemeralRunner => {
    const runnerId = nextRunnerId++;
    actions.registered.add(runnerId);
    return kube.seed<EphemeralRunner>(EphemeralRunnerKind, {
      apiVersion: 'actions.github.com/v1alpha1',
      kind: 'EphemeralRunner',
      metadata: {
        namespace: NS,
        name,
        creationTimestamp: new Date(T0 - ageMinutes * 60_000),
        annotations: { [Annotations.patchId]: String(patchId) },
        ownerReferences: [
          {
            apiVersion: 'actions.github.com/v1alpha1',
            kind: 'EphemeralRunnerSet',
            name: SET,
            uid: set.metadata!.uid!,
            controller: true,
          },
        ],
      },
      spec: ephemeralRunnerSpec,
      status: { phase, runnerId, ready: phase === EphemeralRunnerPhase.Running },
    } as EphemeralRunner);
  };
  /**
   * The listener's patch: `{replicas, patchID}` on the set's spec and, as ARO's listener writes it, the
   * runners whose JobCompleted it had read since its previous patch (upstream's listener names none).
   */
  const listenerPatch = (replicas: number, patchID: number, completedRunners: string[] = []) =>
    kube.mergePatch(EphemeralRunnerSetKind, NS, SET, {
      metadata: {
        annotations: {
          [Annotations.completedRunners]: completedRunners.length > 0 ? completedRunners.join(',') : null,
        },
      },
      spec: { replicas, patchID },
    });
  const reconcile = () =>
    reconciler.reconcile(
      { namespace: NS, name: SET },
      { signal: new AbortController().signal, log: silentLogger },
    );
  const runners = async () =>
    (await kube.list<EphemeralRunner>(EphemeralRunnerKind, { namespace: NS })).filter(
      (r) => !r.metadata?.deletionTimestamp,
    );
  const names = async () => (await runners()).map((r) => r.metadata?.name).sort();
  /** The set's watch event, as the informer hands it to the controller's predicates. */
  const setEvent = async () =>
    reconciler.watchPredicates.set.update?.(
      undefined,
      await kube.get<EphemeralRunnerSet>(EphemeralRunnerSetKind, NS, SET),
    );
  /**
   * A runner's job ends: it exits 0, the EphemeralRunner controller marks it Succeeded and deletes it
   * (its finalizers gone), each step reaching the controller as a watch event.
   */
  const runnerFinishes = async (name: string) => {
    const before = await kube.get<EphemeralRunner>(EphemeralRunnerKind, NS, name);
    const after = await kube.mergePatchStatus<EphemeralRunner>(EphemeralRunnerKind, NS, name, {
      status: { phase: EphemeralRunnerPhase.Succeeded },
    });
    reconciler.watchPredicates.runner.update?.(before, after);
    await kube.delete(EphemeralRunnerKind, NS, name);
    reconciler.watchPredicates.runner.delete?.(after);
  };
  return {
    clock,
    kube,
    actions,
    reconciler,
    runner,
    listenerPatch,
    reconcile,
    runners,
    names,
    setEvent,
    runnerFinishes,
  };
}

/** `count` Running runners of patch 2, each with a job, acted on: the middle of a burst. */
async function busyRunners(s: ReturnType<typeof setup>, count: number): Promise<string[]> {
  const names = Array.from({ length: count }, (_, i) => `busy-${i}`);
  for (const name of names) {
    s.runner(name, EphemeralRunnerPhase.Running, 2);
    await s.kube.mergePatchStatus(EphemeralRunnerKind, NS, name, { status: { jobId: `job-${name}` } });
  }
  await s.listenerPatch(count, 2);
  await s.setEvent();
  await s.reconcile();
  return names;
}

/** Two Running runners and a younger Pending one, all registered and idle, made for patch 3. */
function threeIdleRunners(s: ReturnType<typeof setup>): void {
  s.runner('idle-a', EphemeralRunnerPhase.Running, 3, 10);
  s.runner('idle-b', EphemeralRunnerPhase.Running, 3, 5);
  s.runner('idle-c', EphemeralRunnerPhase.Pending, 3, 1);
}

describe('EphemeralRunnerSetReconciler and the listener patch protocol', () => {
  it('on a converge pass (patch 0) a Failed runner is no capacity: no healthy idle runner is deleted for it', async () => {
    const s = setup();
    s.runner('idle-a', EphemeralRunnerPhase.Running, 3, 10);
    s.runner('idle-b', EphemeralRunnerPhase.Running, 3, 5);
    s.runner('broken', EphemeralRunnerPhase.Failed, 3, 1);
    await s.listenerPatch(2, 0);

    await s.reconcile();

    // The Failed runner is deleted (to be replaced; its own finalizer removes its registration); both
    // healthy runners and their registrations stay.
    expect(await s.names()).toEqual(['idle-a', 'idle-b']);
    expect([...s.actions.registered].filter((id) => id < 102)).toEqual([100, 101]);
  });

  it('a positive listener patch never deletes idle runners, even above its replicas', async () => {
    const s = setup();
    threeIdleRunners(s);
    await s.listenerPatch(1, 4);

    await s.reconcile();

    expect(await s.names()).toEqual(['idle-a', 'idle-b', 'idle-c']);
    expect(s.actions.registered.size).toBe(3);
  });

  it('the same patch converges on patch 0: surplus idle runners go, oldest Pending first (the spec above can fail)', async () => {
    const s = setup();
    threeIdleRunners(s);
    await s.listenerPatch(1, 0);

    await s.reconcile();

    expect(await s.names()).toEqual(['idle-b']);
  });

  it('a patch that arrived before a runner ended after its job is judged with that runner: no runner for a job already over', async () => {
    const s = setup();
    const busy = await busyRunners(s, 10);
    // The listener's next count (statistics taken while every job still ran) arrives; before any pass
    // acts on it, the first job ends and its runner finishes and goes.
    await s.listenerPatch(10, 3);
    await s.setEvent();
    await s.runnerFinishes(busy[0]);

    await s.reconcile();

    expect(await s.names()).toEqual(busy.slice(1).sort());
    // The listener's count after the JobCompleted message: still nothing to make.
    await s.listenerPatch(9, 4);
    await s.setEvent();
    await s.reconcile();
    expect(await s.names()).toEqual(busy.slice(1).sort());
  });

  it('a patch that arrives after a runner ended is judged on the runners alone: a new job gets its runner', async () => {
    const s = setup();
    const busy = await busyRunners(s, 10);
    await s.runnerFinishes(busy[0]);
    // Computed once the job was over, with a new job assigned: ten jobs, nine runners.
    await s.listenerPatch(10, 3);
    await s.setEvent();

    await s.reconcile();

    expect(await s.runners()).toHaveLength(10);
    expect(await s.names()).toEqual(expect.arrayContaining(busy.slice(1)));
  });

  it('a job the listener counted after another ended gets its runner at once when that runner exits late (the listener named it)', async () => {
    const s = setup();
    const busy = await busyRunners(s, 10);
    // busy-0's job completed and a new job was assigned: the listener's count is still ten, and it
    // names busy-0 as done. Its runner is slower than the listener: still Running at the next pass.
    await s.listenerPatch(10, 3, [busy[0]]);
    await s.setEvent();
    await s.reconcile();
    expect(await s.runners()).toHaveLength(10);

    await s.runnerFinishes(busy[0]);
    await s.reconcile();

    // The new job's runner is made in that pass: the slot was not held for a job already left out.
    expect(await s.runners()).toHaveLength(10);
    expect(await s.names()).not.toContain(busy[0]);
  });

  it('a runner that ended under a patch the listener has not answered holds its slot for a few seconds only, then the job gets its runner', async () => {
    const s = setup();
    const busy = await busyRunners(s, 10);
    // The same order with a listener that names no runners (upstream's): the set cannot tell whether
    // the count included busy-0's job, so it holds the slot for the listener's answer, briefly.
    await s.listenerPatch(10, 3);
    await s.setEvent();
    await s.reconcile();
    await s.runnerFinishes(busy[0]);

    let result = await s.reconcile();
    expect(await s.runners()).toHaveLength(9);
    // The passes ask to look again until the hold lapses, so no other event is needed to end it; the
    // job has its runner within the hold. Before, the slot stayed held until the listener's next patch:
    // its idle poll, ~50 s later.
    const heldAt = s.clock.now;
    while ((await s.runners()).length < 10) {
      expect(result.requeueAfterMs).toBeGreaterThan(0);
      s.clock.now += result.requeueAfterMs!;
      expect(s.clock.now - heldAt).toBeLessThanOrEqual(3_000);
      result = await s.reconcile();
    }
    expect(await s.runners()).toHaveLength(10);
  });

  it('an idle runner lost without a job is replaced once under the standing patch, not twice', async () => {
    const s = setup();
    threeIdleRunners(s);
    await s.listenerPatch(3, 4);
    await s.setEvent();
    await s.reconcile();
    expect(await s.runners()).toHaveLength(3);

    // Someone deletes an idle runner: it served no job, so it holds no slot.
    const gone = await s.kube.get<EphemeralRunner>(EphemeralRunnerKind, NS, 'idle-a');
    await s.kube.delete(EphemeralRunnerKind, NS, 'idle-a');
    s.reconciler.watchPredicates.runner.delete?.(gone);
    await s.reconcile();
    expect(await s.runners()).toHaveLength(3);
    // Later passes under the same patch (any runner's event wakes one) find the count met.
    await s.reconcile();
    await s.reconcile();
    expect(await s.runners()).toHaveLength(3);
  });

  it('after a listener restart its patch IDs start again from 0 and are still obeyed', async () => {
    const s = setup();
    // Runners of the listener before its restart, which had reached patch 7.
    s.runner('old-a', EphemeralRunnerPhase.Running, 7, 10);
    await s.listenerPatch(1, 7);
    await s.reconcile();
    expect(await s.names()).toEqual(['old-a']);

    // The new listener converges first, then counts its patches from 1 again.
    await s.listenerPatch(1, 0);
    await s.reconcile();
    await s.listenerPatch(3, 1);
    await s.reconcile();

    const after = await s.runners();
    expect(after).toHaveLength(3);
    expect(after.filter((r) => r.metadata?.annotations?.[Annotations.patchId] === '1')).toHaveLength(2);
  });
});

describe('EphemeralRunnerSetReconciler status writes', () => {
  const status = async (s: ReturnType<typeof setup>) =>
    (await s.kube.get<EphemeralRunnerSet>(EphemeralRunnerSetKind, NS, SET)).status;

  it('writes a change of the counts alone at most once per 2 s window, and the counts of the end of it', async () => {
    const s = setup();
    await s.listenerPatch(3, 1);
    await s.reconcile();
    // The pass after the creations counts them; the set stops being empty, which is written at once.
    await s.reconcile();
    expect((await status(s))?.currentReplicas).toBe(3);

    // Within the window the runners move on (they come up): the status keeps the counts it has...
    for (const r of await s.runners()) {
      await s.kube.mergePatchStatus(EphemeralRunnerKind, NS, r.metadata!.name!, {
        status: { phase: EphemeralRunnerPhase.Running, runnerId: 1 },
      });
    }
    s.clock.now += 500;
    const deferred = await s.reconcile();
    expect(await status(s)).toMatchObject({ pendingEphemeralRunners: 3, runningEphemeralRunners: 0 });
    // ...and the pass asks to be back when the window ends, where it writes the counts of that moment.
    expect(deferred.requeueAfterMs).toBe(1_500);
    s.clock.now += deferred.requeueAfterMs!;
    await s.reconcile();
    expect(await status(s)).toMatchObject({ pendingEphemeralRunners: 0, runningEphemeralRunners: 3 });
  });

  it('writes at once when the set becomes empty, whatever the window', async () => {
    const s = setup();
    await s.listenerPatch(1, 1);
    await s.reconcile();
    await s.reconcile();
    expect((await status(s))?.currentReplicas).toBe(1);

    const [only] = await s.runners();
    await s.runnerFinishes(only.metadata!.name!);
    s.clock.now += 100;
    await s.reconcile();
    // An empty set is what a drain, an uninstall and a person wait for: never held back.
    expect((await status(s))?.currentReplicas).toBe(0);
  });
});
