import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import {
  EPHEMERAL_RUNNER_ACTIONS_FINALIZER,
  EPHEMERAL_RUNNER_FINALIZER,
  EphemeralRunner,
  EphemeralRunnerKind,
  EphemeralRunnerPhase,
} from '@aro/api';
import { ActionsError, type ActionsServiceClient, type RunnerReference } from '@aro/actions';
import { PodKind, type Result, SecretKind } from '@aro/kube';
import { FakeKubeClient, apiError } from '@aro/kube/testing';
import { silentLogger } from '@aro/observability';
import { EphemeralRunnerReconciler } from './ephemeral-runner.reconciler';
import { failureBackoffMs } from './failure-backoff';

/*
 * The time-based branches of upstream's reconciler, on a fake API server and a fake Actions service: each spec pins
 * the interval upstream's reconciler names, so changing one (or answering with a plain error instead of a requeue)
 * fails here in milliseconds instead of in an integration run that would wait it out.
 */

const NS = 'team-a';
const NAME = 'runner-1';
const SCALE_SET = 7;
const T0 = Date.UTC(2026, 0, 1);
const SECOND = 1_000;
const MINUTE = 60 * SECOND;

function actionsError(kind: ActionsError['kind'], detail: string): ActionsError {
  return new ActionsError({ kind, method: 'POST', url: 'https://actions.example/x', detail });
}

/** The part of the Actions service the reconciler calls, with registrations in a map. */
class FakeActions {
  readonly registrations = new Map<string, RunnerReference>();
  private nextId = 100;
  /** Errors the next calls of a method fail with. */
  readonly failures: Partial<Record<'generateJitRunnerConfig' | 'removeRunner', Error[]>> = {};

  async generateJitRunnerConfig(setting: { name: string }, scaleSetId: number) {
    const failure = this.failures.generateJitRunnerConfig?.shift();
    if (failure) throw failure;
    const runner = { id: this.nextId++, name: setting.name, runnerScaleSetId: scaleSetId };
    this.registrations.set(setting.name, runner);
    return { runner, encodedJITConfig: 'jit' };
  }

  async getRunnerByName(name: string) {
    return this.registrations.get(name);
  }

  async removeRunner(id: number) {
    const failure = this.failures.removeRunner?.shift();
    if (failure) throw failure;
    for (const [name, r] of this.registrations) if (r.id === id) this.registrations.delete(name);
  }
}

function setup() {
  const clock = { now: T0 };
  const kube = new FakeKubeClient(() => clock.now);
  const actions = new FakeActions();
  const events: Array<{ type: string; reason: string; message: string }> = [];
  /** The registration removals handed to the queue: what the unregistration workers would remove. */
  const queued: Array<{ name: string; runnerId: number }> = [];
  const reconciler = new EphemeralRunnerReconciler(
    {
      client: kube,
      cache: kube,
      apiReader: kube,
      actions: { getActionsClient: async () => actions as unknown as ActionsServiceClient },
      unregistrations: {
        push: (r: EphemeralRunner, id: number) => {
          queued.push({ name: r.metadata?.name ?? '', runnerId: id });
          return true;
        },
      },
      events: { record: (_obj, type, reason, message) => events.push({ type, reason, message }) },
      logger: silentLogger,
      now: () => clock.now,
    },
    { userAgent: 'spec/0.0.0' },
  );
  const reconcile = (): Promise<Result> =>
    reconciler.reconcile(
      { namespace: NS, name: NAME },
      { signal: new AbortController().signal, log: silentLogger },
    );
  const runner = () => kube.peek<EphemeralRunner>(EphemeralRunnerKind, NS, NAME);
  const createRunner = (change: (r: EphemeralRunner) => void = () => undefined) => {
    const r: EphemeralRunner = {
      apiVersion: 'actions.github.com/v1alpha1',
      kind: 'EphemeralRunner',
      metadata: { namespace: NS, name: NAME },
      spec: {
        githubConfigUrl: 'https://github.com/octo',
        githubConfigSecret: 'gh',
        runnerScaleSetId: SCALE_SET,
        spec: { containers: [{ name: 'runner', image: 'runner' }] },
      },
    };
    change(r);
    return kube.seed(EphemeralRunnerKind, r);
  };
  return { clock, kube, actions, events, queued, reconcile, runner, createRunner };
}

describe('EphemeralRunnerReconciler requeue intervals', () => {
  it('asks again in 30 s about a runner being deleted while its pod executes a job, keeping the pod', async () => {
    const s = setup();
    s.createRunner((r) => {
      r.metadata!.finalizers = [EPHEMERAL_RUNNER_FINALIZER, EPHEMERAL_RUNNER_ACTIONS_FINALIZER];
      r.status = { runnerId: 42, runnerName: NAME, phase: 'Running' };
    });
    s.kube.seed<V1Pod>(PodKind, {
      metadata: { namespace: NS, name: NAME },
      spec: { containers: [{ name: 'runner', image: 'runner' }] },
      status: {
        phase: 'Running',
        containerStatuses: [
          {
            name: 'runner',
            image: 'runner',
            imageID: '',
            ready: true,
            restartCount: 0,
            state: { running: {} },
          },
        ],
      },
    });
    await s.kube.delete(EphemeralRunnerKind, NS, NAME);
    s.actions.failures.removeRunner = [actionsError('JobStillRunning', 'job is still running')];

    await expect(s.reconcile()).resolves.toEqual({ requeueAfterMs: 30_000 });
    expect(s.kube.peek(PodKind, NS, NAME)).toBeDefined();
    expect(s.runner()?.metadata?.finalizers).toContain(EPHEMERAL_RUNNER_ACTIONS_FINALIZER);
  });

  describe('a pod refused for quota', () => {
    const quotaExceeded = (s: ReturnType<typeof setup>) =>
      s.kube.fault((call) =>
        call.verb === 'create' && call.kind === PodKind
          ? apiError(403, 'Forbidden', 'pods "runner-1" is forbidden: exceeded quota: runners', call)
          : undefined,
      );

    it('is retried in 30 s while the runner is younger than 10 minutes', async () => {
      const s = setup();
      s.createRunner();
      quotaExceeded(s);
      s.clock.now = T0 + 10 * MINUTE - SECOND;
      await expect(s.reconcile()).resolves.toEqual({ requeueAfterMs: 30_000 });
      expect(s.runner()?.metadata?.deletionTimestamp).toBeUndefined();
    });

    it('recreates the runner once it is older than 10 minutes', async () => {
      const s = setup();
      s.createRunner();
      quotaExceeded(s);
      s.clock.now = T0 + 10 * MINUTE + SECOND;
      await expect(s.reconcile()).resolves.toEqual({});
      expect(s.runner()?.metadata?.deletionTimestamp).toBeDefined();
    });
  });

  it('waits 5 s for the event of a pod that already exists', async () => {
    const s = setup();
    s.createRunner();
    s.kube.fault((call) =>
      call.verb === 'create' && call.kind === PodKind
        ? apiError(409, 'AlreadyExists', 'pods "runner-1" already exists', call)
        : undefined,
    );
    await expect(s.reconcile()).resolves.toEqual({ requeueAfterMs: 5_000 });
  });

  it('retries the registration in 500 ms after removing a stale one of the same scale set', async () => {
    const s = setup();
    s.createRunner();
    s.actions.registrations.set(NAME, { id: 9, name: NAME, runnerScaleSetId: SCALE_SET });
    s.actions.failures.generateJitRunnerConfig = [actionsError('RunnerExists', 'already exists')];
    await expect(s.reconcile()).resolves.toEqual({ requeueAfterMs: 500 });
    expect(s.actions.registrations.has(NAME)).toBe(false);
    expect(s.kube.peek(SecretKind, NS, NAME)).toBeUndefined();
  });

  it('replaces a corrupt jitconfig secret when no pod uses it, and looks again in 500 ms', async () => {
    const s = setup();
    s.createRunner((r) => {
      r.metadata!.finalizers = [EPHEMERAL_RUNNER_FINALIZER, EPHEMERAL_RUNNER_ACTIONS_FINALIZER];
    });
    s.kube.seed<V1Secret>(SecretKind, {
      metadata: { namespace: NS, name: NAME },
      stringData: { runnerId: 'not-a-number', runnerName: NAME, jitToken: 'jit' },
    });
    await expect(s.reconcile()).resolves.toEqual({ requeueAfterMs: 500 });
    expect(s.kube.peek(SecretKind, NS, NAME)).toBeUndefined();
  });

  it('keeps a corrupt jitconfig secret whose pod exists: a Warning Event naming the secret and key, then 5 s, 10 s, ...', async () => {
    const s = setup();
    s.createRunner((r) => {
      r.metadata!.finalizers = [EPHEMERAL_RUNNER_FINALIZER, EPHEMERAL_RUNNER_ACTIONS_FINALIZER];
    });
    s.kube.seed<V1Secret>(SecretKind, {
      metadata: { namespace: NS, name: NAME },
      stringData: { runnerId: 'not-a-number', runnerName: NAME, jitToken: 'jit' },
    });
    s.kube.seed<V1Pod>(PodKind, {
      metadata: { namespace: NS, name: NAME },
      spec: { containers: [{ name: 'runner', image: 'runner' }] },
    });
    await expect(s.reconcile()).resolves.toEqual({ requeueAfterMs: 5 * SECOND });
    await expect(s.reconcile()).resolves.toEqual({ requeueAfterMs: 10 * SECOND });
    expect(s.kube.peek(SecretKind, NS, NAME)).toBeDefined();
    expect(s.kube.peek(PodKind, NS, NAME)).toBeDefined();
    const corrupt = s.events.filter((e) => e.type === 'Warning' && e.reason === 'CorruptJitConfigSecret');
    expect(corrupt.length).toBeGreaterThanOrEqual(1);
    expect(corrupt[0].message).toContain(`${NS}/${NAME}`);
    expect(corrupt[0].message).toContain('"runnerId"');
  });

  it('promotes an empty phase to Pending, as upstream ARC compares with ""', async () => {
    const s = setup();
    s.createRunner((r) => {
      r.metadata!.finalizers = [EPHEMERAL_RUNNER_FINALIZER, EPHEMERAL_RUNNER_ACTIONS_FINALIZER];
      r.status = { phase: '' as EphemeralRunnerPhase, runnerId: 100, runnerName: NAME, ready: false };
    });
    s.kube.seed<V1Secret>(SecretKind, {
      metadata: { namespace: NS, name: NAME },
      stringData: { runnerId: '100', runnerName: NAME, jitToken: 'jit' },
    });
    s.kube.seed<V1Pod>(PodKind, {
      metadata: { namespace: NS, name: NAME },
      spec: { containers: [{ name: 'runner', image: 'runner' }] },
      status: {
        phase: 'Pending',
        containerStatuses: [
          {
            name: 'runner',
            image: 'runner',
            imageID: '',
            ready: false,
            restartCount: 0,
            state: { waiting: { reason: 'ContainerCreating' } },
          },
        ],
      },
    });
    await s.reconcile();
    expect(s.runner()?.status?.phase).toBe('Pending');
  });

  describe('after a pod failure', () => {
    const failedAt = (ms: number) => new Date(ms).toISOString();

    it.each([
      [1, 5_000],
      [2, 10_000],
      [3, 20_000],
      [4, 40_000],
      [5, 80_000],
    ])('backs off the next pod after %i failures for %i ms from the last one', async (count, backoff) => {
      const s = setup();
      const failures: Record<string, string> = {};
      for (let i = 0; i < count; i++) failures[`pod-${i}`] = failedAt(T0 - (count - i) * SECOND);
      s.createRunner((r) => {
        r.metadata!.finalizers = [EPHEMERAL_RUNNER_FINALIZER, EPHEMERAL_RUNNER_ACTIONS_FINALIZER];
        r.status = { failures };
      });
      s.clock.now = T0;
      // The last failure was 1 s ago: what is left of the backoff.
      await expect(s.reconcile()).resolves.toEqual({ requeueAfterMs: backoff - SECOND });
      expect(failureBackoffMs(count)).toBe(backoff);
      expect(s.kube.peek(PodKind, NS, NAME)).toBeUndefined();

      s.clock.now = T0 + backoff;
      await expect(s.reconcile()).resolves.toEqual({});
      expect(s.kube.peek(PodKind, NS, NAME)).toBeDefined();
    });

    it('deletes the runner past the failure limit so its set recreates it', async () => {
      const s = setup();
      const failures: Record<string, string> = {};
      for (let i = 0; i < 6; i++) failures[`pod-${i}`] = failedAt(T0 - MINUTE);
      s.createRunner((r) => {
        r.metadata!.finalizers = [EPHEMERAL_RUNNER_FINALIZER, EPHEMERAL_RUNNER_ACTIONS_FINALIZER];
        r.status = { failures };
      });
      await expect(s.reconcile()).resolves.toEqual({});
      expect(s.runner()?.metadata?.deletionTimestamp).toBeDefined();
    });
  });
});

describe('EphemeralRunnerReconciler on a runner without a spec', () => {
  it('records Failed with reason InvalidSpec and one Warning Event, adds no finalizers, and never throws', async () => {
    const s = setup();
    s.createRunner((r) => {
      delete (r as Partial<EphemeralRunner>).spec;
    });
    await expect(s.reconcile()).resolves.toEqual({});
    await expect(s.reconcile()).resolves.toEqual({});
    const runner = s.runner();
    expect(runner?.status).toMatchObject({ phase: 'Failed', reason: 'InvalidSpec' });
    expect(runner?.status?.message).toContain('no spec');
    expect(runner?.metadata?.finalizers ?? []).toEqual([]);
    expect(s.events.filter((e) => e.type === 'Warning' && e.reason === 'InvalidSpec')).toHaveLength(1);
  });

  it('drops both finalizers of such a runner being deleted, so that it goes', async () => {
    const s = setup();
    s.createRunner((r) => {
      delete (r as Partial<EphemeralRunner>).spec;
      r.metadata!.finalizers = [EPHEMERAL_RUNNER_FINALIZER, EPHEMERAL_RUNNER_ACTIONS_FINALIZER];
    });
    await s.kube.delete(EphemeralRunnerKind, NS, NAME);
    expect(s.runner()?.metadata?.deletionTimestamp).toBeDefined();
    await expect(s.reconcile()).resolves.toEqual({});
    expect(s.runner()).toBeUndefined();
  });
});

describe('EphemeralRunnerReconciler releasing a registration', () => {
  // What a SIGKILL leaves between the patch dropping the registration finalizer (removal queued in the
  // dead process's memory) and the patch dropping the main one. A runner that exited 0 deregistered
  // itself: nothing to remove, no call.
  it.each([
    [
      'queues again the removal of a runner still registered',
      'Running' as const,
      [{ name: NAME, runnerId: 42 }],
    ],
    ['queues nothing for a runner that deregistered itself (exit 0)', 'Succeeded' as const, []],
  ])(
    'being deleted after a dead process dropped its registration finalizer: %s',
    async (_label, phase, queued) => {
      const s = setup();
      s.createRunner((r) => {
        r.metadata!.finalizers = [EPHEMERAL_RUNNER_FINALIZER];
        r.status = { runnerId: 42, runnerName: NAME, phase };
      });
      await s.kube.delete(EphemeralRunnerKind, NS, NAME);
      await s.reconcile();
      expect(s.runner()).toBeUndefined();
      expect(s.queued).toEqual(queued);
    },
  );

  it('still queues the removal when the patch dropping the registration finalizer answers NotFound (seed 749-758)', async () => {
    const s = setup();
    s.createRunner((r) => {
      r.metadata!.finalizers = [EPHEMERAL_RUNNER_FINALIZER, EPHEMERAL_RUNNER_ACTIONS_FINALIZER];
      r.status = { runnerId: 42, runnerName: NAME, phase: 'Failed' };
    });
    // The runner is gone from the API server while the cache still shows it.
    s.kube.mergePatch = async () => {
      throw apiError(404, 'NotFound', `ephemeralrunners "${NAME}" not found`);
    };
    await s.reconcile();
    expect(s.queued).toEqual([{ name: NAME, runnerId: 42 }]);
  });
});
