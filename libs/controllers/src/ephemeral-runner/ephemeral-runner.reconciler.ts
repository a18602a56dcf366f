import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import {
  EPHEMERAL_RUNNER_ACTIONS_FINALIZER,
  EPHEMERAL_RUNNER_FINALIZER,
  EphemeralRunner,
  EphemeralRunnerKind,
  EphemeralRunnerPhase,
  REASON_TOO_MANY_POD_FAILURES,
  failureCount,
  isDone,
  lastFailure,
} from '@aro/api';
import {
  Expectations,
  FinalizingReconciler,
  LazyCopy,
  PodKind,
  type ReconcileContext,
  type Released,
  Result,
  done,
  isConflict,
  isNotFound,
  removeFinalizer,
  requeueAfter,
  requestFromKey,
} from '@aro/kube';
import type { Logger } from '@aro/observability';
import { RunnerCleanup } from './cleanup';
import { failureBackoffMs } from './failure-backoff';
import { RunnerFinalization } from './finalize';
import { JitSecrets } from './jit-secret';
import { isBeingDeleted, podTerminated } from '../shared/pod-state';
import { linkRunnerToJob } from './job-link';
import {
  type EphemeralRunnerReconcilerDeps,
  type EphemeralRunnerReconcilerOptions,
  type RunnerContext,
  type RunnerPass,
  deleteRunnerOnce,
  runnerContext,
} from './reconciler-context';
import { runnerSelfDeregistered } from '../registrations/runner-registration';
import { RunnerPods } from './runner-pod';
import { RunnerStatusWriter } from './status-writer';
import { DEFAULT_RUNNER_START_TIMEOUT_MS, RunnerStartWatchdog } from './start-watchdog';
import { EvictionProtection } from './eviction-protection';

export { BUSY_RUNNER_REQUEUE_MS } from './reconciler-context';
export type { EphemeralRunnerReconcilerDeps, EphemeralRunnerReconcilerOptions } from './reconciler-context';

/** The status reason (and Event reason) of a runner that has no spec. */
export const REASON_INVALID_SPEC = 'InvalidSpec';

/**
 * The finalizers an EphemeralRunner carries while this controller drives it, added in one write.
 * Without the version lock: a pass acts only on a runner the cache shows past this controller's own
 * writes (OwnWrites), and no other writer sets a runner's finalizers (its set creates it with them),
 * so a lock would only add 409s and retried passes where the cache is behind on a status write.
 */
const FINALIZERS = {
  name: EPHEMERAL_RUNNER_FINALIZER,
  also: [EPHEMERAL_RUNNER_ACTIONS_FINALIZER],
  optimisticLock: false,
};

/**
 * The EphemeralRunner reconciler: one runner, one pod, one job, and a registration on the Actions
 * service that never outlives the runner.
 *
 * Three states decide what a pass does. A runner being deleted releases its registration (removing
 * it first when its pod may still be executing a job, and keeping the pod while the service says it
 * is), then its pod and secret, then its finalizers. A finished runner (Succeeded, Failed, Outdated)
 * only has its resources cleaned up: its EphemeralRunnerSet deletes it. Any other runner is driven
 * forward: finalizers, registration and secret, pod, and a status that mirrors the pod.
 *
 * Every write is justified by a change: patches carry only what changed, and a status that already
 * says what the pod says is not written again.
 */
export class EphemeralRunnerReconciler extends FinalizingReconciler<EphemeralRunner, RunnerContext> {
  private readonly podCreations = new Expectations(
    30_000,
    this.ctx.now,
    this.ctx.memory.slot('pod creations'),
  );
  private readonly status = new RunnerStatusWriter(this.ctx);
  private readonly cleanupParts = new RunnerCleanup(this.ctx, this.podCreations);
  private readonly evictionProtection = new EvictionProtection(
    this.ctx,
    this.status,
    this.ctx.options.evictionProtection ?? true,
  );
  private readonly finalization = new RunnerFinalization(
    this.ctx,
    this.status,
    this.cleanupParts,
    (runner, log) => this.evictionProtection.releaseExitedRunner(runner, log),
  );
  private readonly secrets = new JitSecrets(this.ctx, this.status);
  private readonly pods = new RunnerPods(
    this.ctx,
    this.status,
    this.finalization,
    this.cleanupParts,
    this.podCreations,
  );
  private readonly startWatchdog = new RunnerStartWatchdog(
    this.ctx,
    this.status,
    this.finalization,
    this.ctx.options.startTimeoutMs ?? DEFAULT_RUNNER_START_TIMEOUT_MS,
  );

  constructor(deps: EphemeralRunnerReconcilerDeps, options: EphemeralRunnerReconcilerOptions) {
    super(runnerContext(deps, options), {
      kind: EphemeralRunnerKind,
      finalizer: FINALIZERS,
    });
    // A runner gone from the cache is no longer counted in the phase gauges (registered once here,
    // so no path that forgets a runner can leave its count behind).
    this.ctx.memory.onForget((key) => {
      const { namespace, name } = requestFromKey(key);
      this.status.publishPhase({ metadata: { namespace, name } } as EphemeralRunner, '');
    });
  }

  /**
   * Before the finalizers: a cached runner older than this controller's last write waits for its
   * event; a runner without a spec is refused; a finished one (Succeeded, Failed, Outdated) is only
   * tidied, since its set deletes it.
   */
  protected override async admit(pass: RunnerPass): Promise<Result | undefined> {
    const { obj: runner, key, log } = pass;
    const behind = this.status.behindMs(key, runner.metadata?.resourceVersion);
    if (behind > 0) {
      log.debug("The cached runner predates this controller's last write; waiting for its event");
      return requeueAfter(behind);
    }

    // The CRD requires a spec, but an object stored before it did (or written with validation off)
    // can lack one; every branch below reads it.
    if (!runner.spec) return this.refuseWithoutSpec(runner, log);

    if (isBeingDeleted(runner)) {
      this.ctx.deletions.observe(runner);
      this.status.publishPhase(runner, '');
      return undefined;
    }
    this.status.publishPhase(runner, runner.status?.phase);
    return isDone(runner) ? this.tidyFinished(pass) : undefined;
  }

  /** Being deleted: registration, pod and secret released (see RunnerFinalization). */
  protected cleanup(pass: RunnerPass): Promise<Result | Released> {
    return this.finalization.cleanUp(pass);
  }

  /** Through the status writer, so its own-write tracking sees the finalizer writes too. */
  protected override async writeFinalizers(
    obj: EphemeralRunner,
    patch: object,
    step: 'add' | 'remove',
    pass?: ReconcileContext,
  ): Promise<EphemeralRunner> {
    const log = pass?.log ?? this.ctx.deps.logger;
    if (step === 'add') {
      log.info('Adding finalizers');
      return this.status.patch(obj, patch);
    }
    try {
      await this.status.patch(obj, patch);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    this.status.recordGone(obj);
    log.info('Removed the finalizers; the EphemeralRunner is gone');
    return obj;
  }

  /**
   * A runner without a spec can never run, and never registered (it has no config URL to register
   * through): it is marked Failed with the reason, once, and gets no finalizers; being deleted, it
   * loses any it has, since there is nothing for them to release.
   */
  private async refuseWithoutSpec(runner: EphemeralRunner, log: Logger): Promise<Result> {
    if (isBeingDeleted(runner)) {
      const copy = new LazyCopy(runner);
      const target = copy.mutate();
      removeFinalizer(target, EPHEMERAL_RUNNER_FINALIZER);
      removeFinalizer(target, EPHEMERAL_RUNNER_ACTIONS_FINALIZER);
      const patch = copy.mergePatch();
      if (!patch) return done;
      log.info('Removing the finalizers of a runner without a spec; it holds nothing to release');
      try {
        await this.status.patch(runner, patch);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      this.status.recordGone(runner);
      return done;
    }
    if (runner.status?.reason === REASON_INVALID_SPEC) return done;
    const message = 'the EphemeralRunner has no spec; delete it and create it with one';
    log.warn('Refusing a runner without a spec', { reason: REASON_INVALID_SPEC });
    this.status.event(runner, 'Warning', REASON_INVALID_SPEC, message);
    await this.status.patchStatus(
      runner,
      { phase: EphemeralRunnerPhase.Failed, reason: REASON_INVALID_SPEC, message },
      log,
    );
    return done;
  }

  /** A finished runner (Succeeded, Failed, Outdated): only its resources go; its set deletes it. */
  private async tidyFinished(pass: RunnerPass): Promise<Result> {
    let runner = pass.obj;
    const { log } = pass;
    log.info('Cleaning up the resources of a finished runner', { phase: runner.status?.phase });
    // markAsFailed and markAsOutdated release the registration as they record the phase, but the
    // patch that does it can fail after the phase is written, and the retry lands here, not back in
    // them. Repeated here so that such an error costs a reconcile instead of holding the registration
    // until the set deletes the runner; it does nothing once released. A self-deregistered runner
    // holds nothing: releasing would only drop the finalizer, which the deletion does anyway in a
    // patch it already makes.
    if (!runnerSelfDeregistered(runner)) {
      try {
        runner = await this.finalization.release(pass);
      } catch (err) {
        if (!isConflict(err)) throw err;
        log.debug(
          'The cached runner is behind the API server; looking again before releasing its registration',
        );
        return { requeue: true };
      }
    }
    this.finalization.requeueLostRemoval(runner, log);
    await this.cleanupParts.resources(runner, log);
    log.info('Runner has finished; waiting for its EphemeralRunnerSet to delete it', {
      phase: runner.status?.phase,
    });
    return done;
  }

  /**
   * A live runner with its finalizers: registration and secret, pod, and a status that mirrors it.
   *
   * The jitconfig secret is read from the API where upstream's guarantees need its answer, and
   * nowhere else: before a pod is created from it (a deleted secret re-registers the runner, a corrupt
   * one is replaced while no pod uses it), and for the registration it records while the status has
   * none and this controller does not already know it from the secret it wrote (KnownJitSecrets).
   * A runner whose status carries its ID and whose pod exists does not need the secret at all.
   */
  protected async apply(pass: RunnerPass): Promise<Result> {
    let runner = pass.obj;
    const { key, log } = pass;
    const { namespace = '', name = '' } = runner.metadata ?? {};
    let fresh: V1Secret | undefined;
    let initialRunnerId = 0;
    let initialRunnerName = '';
    if (runner.status?.runnerId) {
      this.ctx.jitSecrets.published(runner);
    } else {
      let identity = this.ctx.jitSecrets.identity(runner);
      if (!identity) {
        const read = await this.secrets.fresh(pass);
        if ('result' in read) return read.result;
        fresh = read.secret;
        identity = read.identity;
        // Registered, with a usable secret: whatever was failing slowly has been fixed.
        this.ctx.slowRetries.reset(key);
      }
      initialRunnerId = identity?.runnerId ?? 0;
      initialRunnerName = identity?.runnerName ?? '';
    }

    const failures = failureCount(runner.status);
    if (failures > this.ctx.maxFailures) {
      log.info('Runner pod failed too many times; deleting the EphemeralRunner so it is recreated', {
        failures,
        maxFailures: this.ctx.maxFailures,
      });
      this.status.event(
        runner,
        'Warning',
        REASON_TOO_MANY_POD_FAILURES,
        `The runner pod failed ${failures} times (limit ${this.ctx.maxFailures}); deleting the EphemeralRunner so that it is recreated`,
      );
      await deleteRunnerOnce(this.ctx, runner);
      return done;
    }

    const last = lastFailure(runner.status);
    if (last) {
      const next = last.getTime() + failureBackoffMs(failures, this.ctx.backoffBaseMs);
      const wait = next - this.ctx.now();
      if (wait > 0) {
        log.info('Backing off the next pod after a failure', {
          lastFailure: last.toISOString(),
          nextAttempt: new Date(next).toISOString(),
          requeueAfterMs: wait,
        });
        return requeueAfter(wait);
      }
    }

    let pod: V1Pod;
    try {
      pod = await this.ctx.deps.cache.get<V1Pod>(PodKind, namespace, name);
      this.podCreations.pendingMs(key, [pod]);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      const lag = this.podCreations.pendingMs(key, []);
      if (lag > 0) {
        log.debug('The pod this controller created has not reached the cache yet; its event will follow');
        return requeueAfter(lag);
      }
      if (!fresh) {
        const read = await this.secrets.fresh(pass);
        if ('result' in read) return read.result;
        fresh = read.secret;
        this.ctx.slowRetries.reset(key);
      }
      return this.pods.create(pass, fresh);
    }

    // A pod runs from the runner's registration: whatever was failing slowly has been fixed.
    this.ctx.slowRetries.reset(key);
    if (!podTerminated(pod)) runner = await linkRunnerToJob(runner, this.status, log);
    const evicted = await this.evictionProtection.guard(runner, pod, log);
    if (evicted) return evicted;
    const linked: RunnerPass = { ...pass, obj: runner };
    return this.startWatchdog.guard(linked, pod, () =>
      this.pods.follow(linked, pod, initialRunnerId, initialRunnerName),
    );
  }
}
