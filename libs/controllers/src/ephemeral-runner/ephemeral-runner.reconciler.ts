import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import {
  EPHEMERAL_RUNNER_ACTIONS_FINALIZER,
  EPHEMERAL_RUNNER_FINALIZER,
  EphemeralRunner,
  EphemeralRunnerKind,
  EphemeralRunnerPhase,
  EphemeralRunnerStatus,
  Labels,
  REASON_INVALID_POD_FAILURE,
  REASON_TOO_MANY_POD_FAILURES,
  RUNNER_VERSION_DEPRECATED_EXIT_CODE,
  Reasons,
  failureCount,
  hasContainerHookConfigured,
  hasJob,
  isDone,
  lastFailure,
} from '@aro/api';
import { isJobStillRunning } from '@aro/actions';
import {
  DeleteOptions,
  KubeApi,
  LazyCopy,
  PodKind,
  Reader,
  Reconciler,
  Request,
  Result,
  SecretKind,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isInvalid,
  ignoreNotFound,
  isNotFound,
  statusMessage,
} from '@aro/kube';
import type { Logger } from '@aro/observability';
import type { EventRecorder } from '../events/event-recorder';
import { CreationExpectations } from './creation-expectations';
import { OwnWrites } from './own-writes';
import { DEFAULT_FAILURE_BACKOFF_BASE_MS, DEFAULT_MAX_FAILURES, failureBackoffMs } from './failure-backoff';
import type { RunnerLifecycleObserver, RunnerPodMutator } from './extensions';
import type { EphemeralRunnerPhaseMetrics } from './phase-metrics';
import {
  initContainerFailed,
  isBeingDeleted,
  podDeleteOptions,
  podReady,
  podTerminated,
  runnerContainerStatus,
} from './pod-state';
import {
  ActionsClientGetter,
  FatalRegistrationError,
  RetryableRegistrationError,
  createJitConfig,
  onceAsync,
  registeredRunnerId,
  removeRunnerOfLivePod,
  runnerSelfDeregistered,
} from './runner-registration';
import {
  buildJitSecret,
  buildRunnerPod,
  proxyEnv,
  runnerIdFromSecret,
  runnerNameFromSecret,
} from './runner-resources';
import type { ActionsClientProvider, UnregistrationQueue } from './unregistration-queue';

/** How long a runner being deleted while its pod executes a job waits before the service is asked again. */
export const BUSY_RUNNER_REQUEUE_MS = 30_000;
/** A pod refused for quota is retried this often, and the runner recreated once it is this old. */
const QUOTA_RETRY_MS = 30_000;
const QUOTA_RECREATE_AFTER_MS = 10 * 60_000;
const POD_ALREADY_EXISTS_REQUEUE_MS = 5_000;
const REGISTRATION_RETRY_MS = 500;

export interface EphemeralRunnerReconcilerOptions {
  /**
   * Grace period for deleting a runner pod whose containers have all exited. Zero by default, so the
   * pod leaves the API as the delete is issued instead of sitting in Terminating while the kubelet
   * tears down the sandbox, holding its name, its scheduling slot and its share of any ResourceQuota
   * from the runner waiting to replace it. A negative value leaves the pod's own grace period. Pods
   * with anything still running are always deleted gracefully.
   */
  terminatedPodGracePeriodSeconds?: number;
  /** Pod failures after which the EphemeralRunner is deleted so its set recreates it. */
  maxFailures?: number;
  failureBackoffBaseMs?: number;
  /** Put in the runner's User-Agent. */
  userAgent: string;
}

export interface EphemeralRunnerReconcilerDeps {
  /** Writes, and the uncached reads of secrets (which are never cached, as upstream). */
  client: KubeApi;
  /** The informer cache, for EphemeralRunners and their pods. */
  cache: Reader;
  /** Uncached reads where the cache is not safe evidence; without it those branches refuse to act. */
  apiReader?: Reader;
  actions: ActionsClientProvider;
  unregistrations: Pick<UnregistrationQueue, 'push'>;
  phaseMetrics?: EphemeralRunnerPhaseMetrics;
  events?: Pick<EventRecorder, 'record'>;
  podMutators?: RunnerPodMutator[];
  observers?: RunnerLifecycleObserver[];
  logger: Logger;
  now?: () => number;
}

const done: Result = {};
const requeueAfter = (ms: number): Result => ({ requeueAfterMs: Math.max(1, Math.ceil(ms)) });

function hasFinalizer(runner: EphemeralRunner, finalizer: string): boolean {
  return runner.metadata?.finalizers?.includes(finalizer) ?? false;
}

function removeFinalizer(runner: EphemeralRunner, finalizer: string): boolean {
  const finalizers = runner.metadata?.finalizers ?? [];
  if (!finalizers.includes(finalizer)) return false;
  runner.metadata = { ...runner.metadata, finalizers: finalizers.filter((f) => f !== finalizer) };
  return true;
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

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
export class EphemeralRunnerReconciler implements Reconciler {
  private readonly gracePeriodSeconds: number;
  private readonly maxFailures: number;
  private readonly backoffBaseMs: number;
  private readonly now: () => number;
  private readonly podCreations: CreationExpectations;
  private readonly ownWrites: OwnWrites;

  constructor(
    private readonly deps: EphemeralRunnerReconcilerDeps,
    private readonly options: EphemeralRunnerReconcilerOptions,
  ) {
    this.gracePeriodSeconds = options.terminatedPodGracePeriodSeconds ?? 0;
    this.maxFailures = options.maxFailures ?? DEFAULT_MAX_FAILURES;
    this.backoffBaseMs = options.failureBackoffBaseMs ?? DEFAULT_FAILURE_BACKOFF_BASE_MS;
    this.now = deps.now ?? Date.now;
    this.podCreations = new CreationExpectations(30_000, this.now);
    this.ownWrites = new OwnWrites(10_000, this.now);
  }

  async reconcile(req: Request, ctx: { signal: AbortSignal; log: Logger }): Promise<Result> {
    const log = ctx.log;
    const key = `${req.namespace}/${req.name}`;
    let runner: EphemeralRunner;
    try {
      runner = await this.deps.cache.get<EphemeralRunner>(EphemeralRunnerKind, req.namespace, req.name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      // Gone without this controller seeing its deletion (finalizers removed by hand): stop counting it.
      this.publishPhase({ metadata: { namespace: req.namespace, name: req.name } } as EphemeralRunner, '');
      this.ownWrites.forget(key);
      return done;
    }

    const behind = this.ownWrites.behindMs(key, runner.metadata?.resourceVersion);
    if (behind > 0) {
      log.debug("The cached runner predates this controller's last write; waiting for its event");
      return requeueAfter(behind);
    }

    if (isBeingDeleted(runner)) {
      return this.finalize(runner, ctx.signal, log);
    }

    this.publishPhase(runner, runner.status?.phase);

    if (isDone(runner)) {
      log.info('Cleaning up the resources of a finished runner', { phase: runner.status?.phase });
      // markAsFailed and markAsOutdated release the registration as they record the phase, but the
      // patch that does it can fail after the phase is written, and the retry lands here, not back in
      // them. Repeated here so that such an error costs a reconcile instead of holding the registration
      // until the set deletes the runner; it does nothing once released. A self-deregistered runner
      // holds nothing: releasing would only drop the finalizer, which the deletion does anyway in a
      // patch it already makes.
      if (!runnerSelfDeregistered(runner)) {
        try {
          runner = await this.queueUnregistration(runner, ctx.signal, log);
        } catch (err) {
          if (!isConflict(err)) throw err;
          log.debug(
            'The cached runner is behind the API server; looking again before releasing its registration',
          );
          return { requeue: true };
        }
      }
      await this.cleanupResources(runner, log);
      log.info('Runner has finished; waiting for its EphemeralRunnerSet to delete it', {
        phase: runner.status?.phase,
      });
      return done;
    }

    if (
      !hasFinalizer(runner, EPHEMERAL_RUNNER_FINALIZER) ||
      !hasFinalizer(runner, EPHEMERAL_RUNNER_ACTIONS_FINALIZER)
    ) {
      log.info('Adding finalizers');
      const copy = new LazyCopy(runner);
      const finalizers = new Set(runner.metadata?.finalizers ?? []);
      finalizers.add(EPHEMERAL_RUNNER_FINALIZER);
      finalizers.add(EPHEMERAL_RUNNER_ACTIONS_FINALIZER);
      copy.mutate().metadata = { ...runner.metadata, finalizers: [...finalizers] };
      runner = await this.patch(runner, copy.mergePatch());
    }

    const secretResult = await this.ensureJitSecret(runner, ctx.signal, log);
    if ('result' in secretResult) return secretResult.result;
    const secret = secretResult.secret;

    let initialRunnerId = 0;
    let initialRunnerName = '';
    if (!runner.status?.runnerId) {
      try {
        initialRunnerId = runnerIdFromSecret(secret);
        initialRunnerName = runnerNameFromSecret(secret);
      } catch (err) {
        return this.replaceCorruptSecret(runner, secret, err, log);
      }
    }

    const failures = failureCount(runner.status);
    if (failures > this.maxFailures) {
      log.info('Runner pod failed too many times; deleting the EphemeralRunner so it is recreated', {
        failures,
        maxFailures: this.maxFailures,
      });
      this.deps.events?.record(
        runner,
        'Warning',
        REASON_TOO_MANY_POD_FAILURES,
        `The runner pod failed ${failures} times (limit ${this.maxFailures}); deleting the EphemeralRunner so that it is recreated`,
      );
      await this.deps.client.delete(EphemeralRunnerKind, req.namespace, req.name);
      return done;
    }

    const last = lastFailure(runner.status);
    if (last) {
      const next = last.getTime() + failureBackoffMs(failures, this.backoffBaseMs);
      const wait = next - this.now();
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
      pod = await this.deps.cache.get<V1Pod>(PodKind, req.namespace, req.name);
      this.podCreations.observed(key);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      const lag = this.podCreations.remainingMs(key);
      if (lag > 0) {
        log.debug('The pod this controller created has not reached the cache yet; its event will follow');
        return requeueAfter(lag);
      }
      return this.createPod(runner, secret, ctx.signal, log);
    }

    return this.followPod(runner, pod, initialRunnerId, initialRunnerName, ctx.signal, log);
  }

  /** The deletion branch: release the registration, delete the pod and secret, drop the finalizers. */
  private async finalize(runner: EphemeralRunner, signal: AbortSignal, log: Logger): Promise<Result> {
    this.publishPhase(runner, '');
    if (!hasFinalizer(runner, EPHEMERAL_RUNNER_FINALIZER)) return done;

    const copy = new LazyCopy(runner);
    let actionsFinalizerDeferred = false;
    if (hasFinalizer(runner, EPHEMERAL_RUNNER_ACTIONS_FINALIZER)) {
      // The registration finalizer exists to release the runner's registration, in one of two ways.
      // A runner that exited 0 deregistered itself; that is the path every completed job takes, and
      // it costs no API call. Any other runner may still hold a registration, and while its pod is
      // alive it may be executing a job this controller has not heard of (the ID reaches the status
      // only after the pod exists; a job only once the listener reports it). So the service is asked
      // to remove it before a live pod is deleted, and a runner still executing a job keeps its pod.
      // A pod with nothing left running cannot be executing a job: for it, and for a runner without a
      // pod, the removal goes to the background queue so the cleanup below never waits on the service.
      let runnerId = 0;
      if (runnerSelfDeregistered(runner)) {
        log.info('Runner exited successfully and deregistered itself; skipping its removal from the service');
      } else {
        const getClient: ActionsClientGetter = onceAsync(() =>
          this.deps.actions.getActionsClient(runner, signal),
        );
        // Resolved before the finalizer goes: recovering an ID the status never recorded reads the
        // jitconfig secret, which the cleanup below deletes.
        runnerId = await registeredRunnerId(runner, this.deps.client, getClient, log, signal);
        if (runnerId !== 0) {
          try {
            if (await removeRunnerOfLivePod(runner, runnerId, this.deps.apiReader, getClient, log, signal))
              runnerId = 0;
          } catch (err) {
            if (!isJobStillRunning(err)) {
              throw new Error(
                `failed to remove the runner of a live pod from the service: ${describe(err)}`,
                {
                  cause: err,
                },
              );
            }
            log.info('Runner is still executing a job; keeping its pod', {
              runnerId,
              requeueAfterMs: BUSY_RUNNER_REQUEUE_MS,
            });
            return requeueAfter(BUSY_RUNNER_REQUEUE_MS);
          }
        }
      }

      log.info('Removing the runner registration finalizer', {
        unregisterFromService: runnerId !== 0,
        phase: runner.status?.phase,
      });
      const removed = removeFinalizer(copy.mutate(), EPHEMERAL_RUNNER_ACTIONS_FINALIZER);
      // The patch must land before the runner is queued: queueing first would ask the service twice
      // when the patch fails and the retry comes back through here. With nothing to queue there is
      // nothing to order against, so the removal rides along with the last finalizer patch below
      // instead of paying for a round trip of its own.
      actionsFinalizerDeferred = removed && runnerId === 0;
      if (removed && !actionsFinalizerDeferred) {
        // Pinned to the resourceVersion read: from a cache that is behind (the registration already
        // released by a write it has not seen yet) the patch conflicts instead of queueing it twice.
        try {
          await this.patch(runner, copy.mergePatch({ optimisticLock: true }));
        } catch (err) {
          if (!isConflict(err)) throw err;
          log.debug(
            'The cached runner is behind the API server; looking again before releasing its registration',
          );
          return { requeue: true };
        }
      }
      if (runnerId !== 0) this.deps.unregistrations.push(runner, runnerId);
    }

    log.info('Finalizing the ephemeral runner');
    await this.cleanupResources(runner, log);
    if (hasContainerHookConfigured(runner)) {
      log.info('Runner has container hooks configured; cleaning up their pods and secrets');
      await this.cleanupContainerHookResources(runner, log);
    }

    if (removeFinalizer(copy.mutate(), EPHEMERAL_RUNNER_FINALIZER) || actionsFinalizerDeferred) {
      try {
        await this.patch(runner, copy.mergePatch());
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      // The patch that lets the API server delete the object answers with the version it read, not a
      // new one; the copy just finalized is nonetheless gone, and must not be finalized again.
      this.ownWrites.record(
        `${runner.metadata?.namespace}/${runner.metadata?.name}`,
        runner.metadata?.resourceVersion,
        '',
      );
      log.info('Removed the finalizers; the EphemeralRunner is gone');
    }
    return done;
  }

  private async ensureJitSecret(
    runner: EphemeralRunner,
    signal: AbortSignal,
    log: Logger,
  ): Promise<{ secret: V1Secret } | { result: Result }> {
    const { namespace = '', name = '' } = runner.metadata ?? {};
    try {
      return { secret: await this.deps.client.get<V1Secret>(SecretKind, namespace, name) };
    } catch (err) {
      if (!isNotFound(err))
        throw new Error(`failed to fetch the jitconfig secret: ${describe(err)}`, { cause: err });
    }

    let jit;
    try {
      jit = await createJitConfig(
        runner,
        () => this.deps.actions.getActionsClient(runner, signal),
        log,
        signal,
      );
    } catch (err) {
      if (err instanceof RetryableRegistrationError) {
        log.info('Registration conflict resolved; retrying', { reason: err.message });
        return { result: requeueAfter(REGISTRATION_RETRY_MS) };
      }
      if (err instanceof FatalRegistrationError) {
        log.info('JIT config cannot be created for this runner; deleting the EphemeralRunner', {
          reason: err.message,
        });
        this.deps.events?.record(runner, 'Warning', 'RegistrationConflict', err.message);
        // Names are unique across the service's scope, so a name held by another scale set means this
        // runner holds no registration: its registration finalizer has nothing to release. Left in
        // place it would hold the deletion forever, since the finalizer branch must treat a foreign
        // registration found by name as an error rather than as "never registered".
        const copy = new LazyCopy(runner);
        removeFinalizer(copy.mutate(), EPHEMERAL_RUNNER_ACTIONS_FINALIZER);
        await this.patch(runner, copy.mergePatch());
        await this.deps.client.delete(EphemeralRunnerKind, namespace, name);
        return { result: done };
      }
      this.deps.events?.record(runner, 'Warning', 'RegistrationFailed', describe(err));
      throw err;
    }

    log.info('Creating the jitconfig secret');
    try {
      const secret = await this.deps.client.create<V1Secret>(SecretKind, buildJitSecret(runner, jit));
      log.info('Created the jitconfig secret', { runnerId: jit.runner.id });
      return { secret };
    } catch (err) {
      throw new Error(`failed to create the jitconfig secret: ${describe(err)}`, { cause: err });
    }
  }

  /**
   * A secret whose runner ID is unusable is replaced only when no pod exists: replacing a secret a
   * pod already consumed could tie a new registration to a live runner. Only the uncached reader is
   * evidence that no pod exists; without one the controller refuses.
   */
  private async replaceCorruptSecret(
    runner: EphemeralRunner,
    secret: V1Secret,
    cause: unknown,
    log: Logger,
  ): Promise<Result> {
    const { namespace = '', name = '' } = runner.metadata ?? {};
    log.error('The jitconfig secret holds an invalid runner ID', cause);
    if (!this.deps.apiReader) {
      throw new Error(
        `cannot safely replace the jitconfig secret without an uncached reader: ${describe(cause)}`,
        {
          cause,
        },
      );
    }
    try {
      await this.deps.apiReader.get(PodKind, namespace, name);
    } catch (podErr) {
      if (!isNotFound(podErr)) {
        throw new Error(
          `failed to check the runner pod before replacing an invalid jitconfig secret: ${describe(podErr)}`,
          { cause: podErr },
        );
      }
      log.info('Deleting the corrupted jitconfig secret; no pod uses it');
      this.deps.events?.record(
        runner,
        'Warning',
        'CorruptJitConfigSecret',
        `${describe(cause)}; replacing the secret`,
      );
      await this.deps.client.delete(SecretKind, namespace, name, {
        preconditions: secret.metadata?.uid ? { uid: secret.metadata.uid } : undefined,
      });
      return requeueAfter(REGISTRATION_RETRY_MS);
    }
    throw new Error(`the jitconfig secret is corrupt and its pod exists, keeping both: ${describe(cause)}`, {
      cause,
    });
  }

  private async createPod(
    runner: EphemeralRunner,
    secret: V1Secret,
    signal: AbortSignal,
    log: Logger,
  ): Promise<Result> {
    log.info('Runner pod does not exist; creating it');
    const pod = buildRunnerPod(runner, secret, { userAgent: this.options.userAgent }, proxyEnv(runner));
    for (const mutator of this.deps.podMutators ?? []) {
      await mutator.mutate(pod, runner);
    }
    try {
      await this.deps.client.create(PodKind, pod);
      this.podCreations.expect(`${runner.metadata?.namespace}/${runner.metadata?.name}`);
      log.info('Created the runner pod', { runnerScaleSetId: runner.spec.runnerScaleSetId });
      return done;
    } catch (err) {
      if (isAlreadyExists(err)) {
        log.info('Runner pod already exists; waiting for its event');
        return requeueAfter(POD_ALREADY_EXISTS_REQUEUE_MS);
      }
      if (isForbidden(err) && (statusMessage(err) ?? '').includes('exceeded quota:')) {
        const created = new Date(runner.metadata?.creationTimestamp ?? this.now()).getTime();
        if (created + QUOTA_RECREATE_AFTER_MS < this.now()) {
          log.error('Resource quota still exceeded after 10 minutes; recreating the EphemeralRunner', err);
          this.deps.events?.record(
            runner,
            'Warning',
            'QuotaExceeded',
            `${statusMessage(err)}; recreating the runner`,
          );
          await this.deps.client.delete(
            EphemeralRunnerKind,
            runner.metadata?.namespace ?? '',
            runner.metadata?.name ?? '',
          );
          return done;
        }
        log.warn('Resource quota exceeded; retrying the pod later', {
          requeueAfterMs: QUOTA_RETRY_MS,
          message: statusMessage(err),
        });
        this.deps.events?.record(
          runner,
          'Warning',
          'QuotaExceeded',
          `${statusMessage(err)}; retrying in 30s`,
        );
        return requeueAfter(QUOTA_RETRY_MS);
      }
      if (isInvalid(err) || isForbidden(err)) {
        log.error('The runner pod was refused; marking the runner Failed', err);
        await this.markAsFailed(
          runner,
          `Failed to create the pod: ${describe(err)}`,
          REASON_INVALID_POD_FAILURE,
          signal,
          log,
        );
        return done;
      }
      throw new Error(`failed to create the runner pod: ${describe(err)}`, { cause: err });
    }
  }

  private async followPod(
    runner: EphemeralRunner,
    pod: V1Pod,
    initialRunnerId: number,
    initialRunnerName: string,
    signal: AbortSignal,
    log: Logger,
  ): Promise<Result> {
    const runnerStatus = runnerContainerStatus(pod);
    const terminated = runnerStatus?.state?.terminated;

    if (pod.status?.phase === 'Failed') {
      log.info('Runner pod failed; inspecting the runner container', {
        podReason: pod.status.reason,
        podMessage: pod.status.message,
      });
      // A pod that failed before the runner started has no terminated state: retry it as a failure.
      if (!terminated) {
        await this.deleteRunnerOrPod(runner, pod, log);
        return done;
      }
      if (terminated.exitCode === 0) {
        // A sidecar exiting non-zero fails the pod; the runner's own exit says whether the job ran.
        log.info('Runner container succeeded although the pod failed; treating it as success');
        return this.succeed(runner, pod, log);
      }
      if (terminated.exitCode === RUNNER_VERSION_DEPRECATED_EXIT_CODE) {
        await this.markAsOutdated(runner, signal, log);
        return done;
      }
      log.info('Runner container failed', { exitCode: terminated.exitCode, reason: terminated.reason });
      await this.deleteRunnerOrPod(runner, pod, log);
      return done;
    }

    if (initContainerFailed(pod)) {
      log.info('An init container of the runner pod failed; retrying the pod as a failure');
      await this.deleteRunnerOrPod(runner, pod, log);
      return done;
    }

    if (!runnerStatus) {
      log.debug('Waiting for the runner container status');
      return done;
    }

    if (!terminated) {
      await this.updateStatusFromPod(runner, pod, initialRunnerId, initialRunnerName, log);
      return done;
    }

    if (terminated.exitCode === RUNNER_VERSION_DEPRECATED_EXIT_CODE) {
      await this.markAsOutdated(runner, signal, log);
      return done;
    }
    if (terminated.exitCode !== 0) {
      log.info('Runner container failed', { exitCode: terminated.exitCode, reason: terminated.reason });
      await this.deleteRunnerOrPod(runner, pod, log);
      return done;
    }
    log.info('Runner finished successfully; deleting the EphemeralRunner');
    return this.succeed(runner, pod, log);
  }

  private async succeed(runner: EphemeralRunner, pod: V1Pod, log: Logger): Promise<Result> {
    await this.patchStatus(
      runner,
      {
        phase: EphemeralRunnerPhase.Succeeded,
        ready: false,
        reason: pod.status?.reason,
        message: pod.status?.message,
      },
      log,
    );
    await this.deps.client.delete(
      EphemeralRunnerKind,
      runner.metadata?.namespace ?? '',
      runner.metadata?.name ?? '',
    );
    return done;
  }

  /**
   * A failed pod is retried with a new pod, unless a job was assigned to it: that job is lost with the
   * pod, and the whole runner goes (its finalizer queues the registration's removal) so the set can
   * replace it with one the service will assign fresh work to.
   */
  private async deleteRunnerOrPod(runner: EphemeralRunner, pod: V1Pod, log: Logger): Promise<void> {
    if (hasJob(runner)) {
      log.error(
        'The runner pod failed with a job assigned; deleting the EphemeralRunner',
        new Error('ephemeral runner has a job assigned, but the pod has failed'),
        { jobId: runner.status?.jobId },
      );
      this.deps.events?.record(
        runner,
        'Warning',
        'RunnerPodFailed',
        `The runner pod failed while job ${runner.status?.jobId} was assigned; the runner is deleted and replaced`,
      );
      await this.deps.client.delete(
        EphemeralRunnerKind,
        runner.metadata?.namespace ?? '',
        runner.metadata?.name ?? '',
      );
      return;
    }
    await this.deletePodAsFailed(runner, pod, log);
  }

  /** Deletes the pod and records the failure by pod UID, which counts towards the limit and the backoff. */
  private async deletePodAsFailed(runner: EphemeralRunner, pod: V1Pod, log: Logger): Promise<void> {
    if (!isBeingDeleted(pod)) {
      log.info('Deleting the failed runner pod', { podUid: pod.metadata?.uid });
      await this.deps.client
        .delete(PodKind, pod.metadata?.namespace ?? '', pod.metadata?.name ?? '', this.deletePodOptions(pod))
        .catch(ignoreNotFound);
    }
    const uid = pod.metadata?.uid ?? '';
    const failures = { ...(runner.status?.failures ?? {}), [uid]: new Date(this.now()).toISOString() };
    this.deps.events?.record(
      runner,
      'Warning',
      'RunnerPodFailed',
      `Runner pod ${uid} failed (${Object.keys(failures).length} of ${this.maxFailures} allowed)${pod.status?.reason ? `: ${pod.status.reason}` : ''}`,
    );
    await this.patchStatus(
      runner,
      { failures, ready: false, reason: pod.status?.reason, message: pod.status?.message },
      log,
    );
  }

  private async markAsFailed(
    runner: EphemeralRunner,
    message: string,
    reason: string,
    signal: AbortSignal,
    log: Logger,
  ): Promise<void> {
    log.info('Marking the runner Failed', { reason });
    this.deps.events?.record(runner, 'Warning', reason, message);
    const updated = await this.patchStatus(
      runner,
      { phase: EphemeralRunnerPhase.Failed, reason, message },
      log,
    );
    // A failed runner stays until its set deletes it, which can take long: release the registration now.
    await this.queueUnregistration(updated, signal, log);
  }

  private async markAsOutdated(runner: EphemeralRunner, signal: AbortSignal, log: Logger): Promise<void> {
    log.info('Runner version is deprecated; marking the runner Outdated');
    this.deps.events?.record(
      runner,
      'Warning',
      Reasons.outdated,
      'The runner exited with the "version deprecated" code: update the runner image of this scale set',
    );
    const updated = await this.patchStatus(
      runner,
      { phase: EphemeralRunnerPhase.Outdated, reason: Reasons.outdated, message: 'Runner is deprecated' },
      log,
    );
    // Queued rather than removed here, as for a failed runner: the phase has no reason to wait on the service.
    await this.queueUnregistration(updated, signal, log);
  }

  /**
   * Releases the runner's registration: hands its removal to the queue and drops the finalizer that
   * exists to make it happen. Dropping the finalizer is what keeps this to one removal (the deletion
   * that follows would queue it again) and what makes it safe to call twice: a released runner is
   * left alone.
   */
  private async queueUnregistration(
    runner: EphemeralRunner,
    signal: AbortSignal,
    log: Logger,
  ): Promise<EphemeralRunner> {
    if (!hasFinalizer(runner, EPHEMERAL_RUNNER_ACTIONS_FINALIZER)) return runner;
    let runnerId = 0;
    if (runnerSelfDeregistered(runner)) {
      log.info('Runner exited successfully and deregistered itself; skipping its removal from the service');
    } else {
      runnerId = await registeredRunnerId(
        runner,
        this.deps.client,
        onceAsync(() => this.deps.actions.getActionsClient(runner, signal)),
        log,
        signal,
      );
    }
    const copy = new LazyCopy(runner);
    removeFinalizer(copy.mutate(), EPHEMERAL_RUNNER_ACTIONS_FINALIZER);
    let updated: EphemeralRunner;
    try {
      // Pinned to the resourceVersion read, so that a runner read from a cache that has not seen its
      // release yet gets a conflict rather than a second removal.
      updated = await this.patch(runner, copy.mergePatch({ optimisticLock: true }));
    } catch (err) {
      // NotFound: another actor removed it and the runner finished deleting; nothing left to queue
      // twice. A conflict is returned as is for the caller to look again. Any other failure leaves the
      // removal to the retry rather than queueing it twice.
      if (isNotFound(err)) return runner;
      if (isConflict(err)) throw err;
      throw new Error(`failed to remove the runner registration finalizer: ${describe(err)}`, { cause: err });
    }
    if (runnerId !== 0) this.deps.unregistrations.push(runner, runnerId);
    return updated;
  }

  /**
   * Status for a runner whose container has not terminated; never a terminal phase.
   *
   * Pending is published as soon as the runner is seen non-terminal, whatever the pod phase: by then
   * the pod has usually moved on to Running, and keying on PodPending would leave the runner without a
   * phase for its whole life, out of the phase metrics and in breach of "Pending = created, no job".
   * Only an empty phase is replaced, so a terminal phase or Running is never overwritten. The runner
   * ID and name ride along with that first patch, saving a status write of their own.
   */
  private async updateStatusFromPod(
    runner: EphemeralRunner,
    pod: V1Pod,
    initialRunnerId: number,
    initialRunnerName: string,
    log: Logger,
  ): Promise<void> {
    if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') return;
    const status = runner.status ?? {};
    const ready = podReady(pod);
    let phase: EphemeralRunnerPhase = status.phase ?? EphemeralRunnerPhase.Pending;
    // The listener writes only job metadata; promoting an assigned runner is this controller's job,
    // so the two never race on the phase.
    if (phase === EphemeralRunnerPhase.Pending && hasJob(runner)) phase = EphemeralRunnerPhase.Running;

    const identityChanged = !status.runnerId;
    if (phase === status.phase && ready === (status.ready ?? false) && !identityChanged) return;

    log.info('Updating the runner status from its pod', { phase, ready, podPhase: pod.status?.phase });
    const change: EphemeralRunnerStatus = {
      phase,
      ready,
      reason: pod.status?.reason,
      message: pod.status?.message,
    };
    if (identityChanged) {
      change.runnerId = initialRunnerId;
      change.runnerName = initialRunnerName;
    }
    await this.patchStatus(runner, change, log);
  }

  private async cleanupResources(runner: EphemeralRunner, log: Logger): Promise<void> {
    const { namespace = '', name = '' } = runner.metadata ?? {};
    let pod: V1Pod | undefined;
    try {
      pod = await this.deps.cache.get<V1Pod>(PodKind, namespace, name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    if (pod && !isBeingDeleted(pod)) {
      log.info('Deleting the runner pod', { podUid: pod.metadata?.uid, terminated: podTerminated(pod) });
      try {
        await this.deps.client
          .delete(PodKind, namespace, name, this.deletePodOptions(pod))
          .catch(ignoreNotFound);
      } catch (err) {
        throw new Error(`failed to delete the runner pod: ${describe(err)}`, { cause: err });
      }
    }

    let secret: V1Secret | undefined;
    try {
      secret = await this.deps.client.get<V1Secret>(SecretKind, namespace, name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    if (secret && !isBeingDeleted(secret)) {
      log.info('Deleting the jitconfig secret');
      try {
        await this.deps.client.delete(SecretKind, namespace, name).catch(ignoreNotFound);
      } catch (err) {
        throw new Error(`failed to delete the jitconfig secret: ${describe(err)}`, { cause: err });
      }
    }
  }

  /** Pods and secrets the Kubernetes container hook made for the runner's job, found by label. */
  private async cleanupContainerHookResources(runner: EphemeralRunner, log: Logger): Promise<void> {
    const namespace = runner.metadata?.namespace ?? '';
    const labelSelector = `${Labels.runnerPod}=${runner.metadata?.name}`;
    const errors: Error[] = [];
    const sweep = async (kind: typeof PodKind, what: string) => {
      let items: V1Pod[] | V1Secret[];
      try {
        items = await this.deps.client.list<V1Pod | V1Secret>(kind, { namespace, labelSelector });
      } catch (err) {
        errors.push(new Error(`failed to list runner-linked ${what}s: ${describe(err)}`));
        return;
      }
      for (const item of items) {
        if (isBeingDeleted(item)) continue;
        log.info(`Deleting a container hook ${what}`, { [what]: item.metadata?.name });
        try {
          await this.deps.client
            .delete(
              kind,
              namespace,
              item.metadata?.name ?? '',
              kind === PodKind ? this.deletePodOptions(item as V1Pod) : undefined,
            )
            .catch(ignoreNotFound);
        } catch (err) {
          errors.push(
            new Error(`failed to delete runner-linked ${what} ${item.metadata?.name}: ${describe(err)}`),
          );
        }
      }
    };
    await sweep(PodKind, 'pod');
    await sweep(SecretKind, 'secret');
    if (errors.length > 0) throw new AggregateError(errors, errors.map((e) => e.message).join('; '));
  }

  private deletePodOptions(pod: V1Pod): DeleteOptions | undefined {
    return podDeleteOptions(pod, this.gracePeriodSeconds);
  }

  private async patch(runner: EphemeralRunner, patch: object | undefined): Promise<EphemeralRunner> {
    if (!patch) return runner;
    const updated = await this.deps.client.mergePatch<EphemeralRunner>(
      EphemeralRunnerKind,
      runner.metadata?.namespace ?? '',
      runner.metadata?.name ?? '',
      patch,
    );
    this.recordWrite(runner, updated);
    return updated;
  }

  private recordWrite(before: EphemeralRunner, after: EphemeralRunner): void {
    this.ownWrites.record(
      `${before.metadata?.namespace}/${before.metadata?.name}`,
      before.metadata?.resourceVersion,
      after.metadata?.resourceVersion,
    );
  }

  /** Writes the changed status fields through the status subresource, then tells metrics and observers. */
  private async patchStatus(
    runner: EphemeralRunner,
    change: EphemeralRunnerStatus,
    log: Logger,
  ): Promise<EphemeralRunner> {
    const copy = new LazyCopy(runner);
    const target = copy.mutate();
    target.status = { ...(target.status ?? {}), ...change };
    for (const key of Object.keys(change) as (keyof EphemeralRunnerStatus)[]) {
      if (change[key] === undefined) delete target.status[key];
    }
    const patch = copy.mergePatch();
    if (!patch) return runner;
    let updated: EphemeralRunner;
    try {
      updated = await this.deps.client.mergePatchStatus<EphemeralRunner>(
        EphemeralRunnerKind,
        runner.metadata?.namespace ?? '',
        runner.metadata?.name ?? '',
        patch,
      );
    } catch (err) {
      throw new Error(`failed to update the runner status: ${describe(err)}`, { cause: err });
    }
    this.recordWrite(runner, updated);
    const from = runner.status?.phase;
    const to = updated.status?.phase;
    if (from !== to) {
      this.publishPhase(updated, to);
      log.info('Runner phase changed', { from: from ?? '', to });
      if (
        to === EphemeralRunnerPhase.Pending ||
        to === EphemeralRunnerPhase.Running ||
        to === EphemeralRunnerPhase.Succeeded
      ) {
        this.deps.events?.record(updated, 'Normal', `Runner${to}`, this.transitionMessage(updated, to));
      }
      for (const observer of this.deps.observers ?? []) {
        try {
          observer.onPhaseChange?.(updated, from, to);
        } catch (err) {
          log.warn('A runner lifecycle observer failed', { err: describe(err) });
        }
      }
    }
    return updated;
  }

  private transitionMessage(runner: EphemeralRunner, phase: EphemeralRunnerPhase | undefined): string {
    switch (phase) {
      case EphemeralRunnerPhase.Pending:
        return `Runner ${runner.status?.runnerName ?? ''} (id ${runner.status?.runnerId ?? 0}) is registered and waiting for a job`;
      case EphemeralRunnerPhase.Running:
        return `Runner is executing job ${runner.status?.jobId ?? ''}`;
      default:
        return 'Runner finished its job and deregistered itself';
    }
  }

  private publishPhase(runner: EphemeralRunner, phase: EphemeralRunnerPhase | '' | undefined): void {
    this.deps.phaseMetrics?.publish(runner, phase);
  }
}
