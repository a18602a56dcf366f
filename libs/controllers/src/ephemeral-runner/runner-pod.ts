import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import {
  EphemeralRunner,
  EphemeralRunnerPhase,
  EphemeralRunnerStatus,
  REASON_INVALID_POD_FAILURE,
  RUNNER_VERSION_DEPRECATED_EXIT_CODE,
  Reasons,
  hasJob,
} from '@aro/api';
import {
  PodKind,
  type Result,
  ignoreNotFound,
  isAlreadyExists,
  isForbidden,
  isInvalid,
  statusMessage,
  done,
  requeueAfter,
  type Expectations,
  objectKey,
} from '@aro/kube';
import type { Logger } from '@aro/observability';
import type { RunnerCleanup } from './cleanup';
import type { RunnerFinalization } from './finalize';
import { initContainerFailed, isBeingDeleted, podReady, runnerContainerStatus } from '../shared/pod-state';
import {
  POD_ALREADY_EXISTS_REQUEUE_MS,
  QUOTA_RECREATE_AFTER_MS,
  QUOTA_RETRY_MS,
  type RunnerContext,
  type RunnerPass,
  deleteRunnerOnce,
} from './reconciler-context';
import { buildRunnerPod, proxyEnv } from './runner-resources';
import type { RunnerStatusWriter } from './status-writer';
import { describeError } from '../shared/describe-error';

/**
 * The runner pod: creating it (with the extensions' mutations), and following it to the runner's
 * outcome: a status that mirrors it, a retried failure, a Failed or Outdated runner, or success.
 */
export class RunnerPods {
  constructor(
    private readonly ctx: RunnerContext,
    private readonly status: RunnerStatusWriter,
    private readonly finalization: RunnerFinalization,
    private readonly cleanup: RunnerCleanup,
    private readonly podCreations: Expectations,
  ) {}

  async create(pass: RunnerPass, secret: V1Secret): Promise<Result> {
    const { obj: runner, log } = pass;
    log.info('Runner pod does not exist; creating it');
    const pod = buildRunnerPod(runner, secret, { userAgent: this.ctx.userAgent }, proxyEnv(runner));
    for (const mutator of this.ctx.deps.podMutators ?? []) {
      await mutator.mutate(pod, runner);
    }
    try {
      await this.ctx.deps.client.create(PodKind, pod);
      this.podCreations.expectCreation(objectKey(runner), pod.metadata?.name ?? '');
      log.info('Created the runner pod', { runnerScaleSetId: runner.spec.runnerScaleSetId });
      return done;
    } catch (err) {
      if (isAlreadyExists(err)) {
        log.info('Runner pod already exists; waiting for its event');
        return requeueAfter(POD_ALREADY_EXISTS_REQUEUE_MS);
      }
      if (isForbidden(err) && (statusMessage(err) ?? '').includes('exceeded quota:')) {
        const created = new Date(runner.metadata?.creationTimestamp ?? this.ctx.now()).getTime();
        if (created + QUOTA_RECREATE_AFTER_MS < this.ctx.now()) {
          log.error('Resource quota still exceeded after 10 minutes; recreating the EphemeralRunner', err);
          this.status.event(
            runner,
            'Warning',
            'QuotaExceeded',
            `${statusMessage(err)}; recreating the runner`,
          );
          await deleteRunnerOnce(this.ctx, runner);
          return done;
        }
        log.warn('Resource quota exceeded; retrying the pod later', {
          requeueAfterMs: QUOTA_RETRY_MS,
          message: statusMessage(err),
        });
        this.status.event(runner, 'Warning', 'QuotaExceeded', `${statusMessage(err)}; retrying in 30s`);
        return requeueAfter(QUOTA_RETRY_MS);
      }
      if (isInvalid(err) || isForbidden(err)) {
        log.error('The runner pod was refused; marking the runner Failed', err);
        await this.markAsFailed(
          pass,
          `Failed to create the pod: ${describeError(err)}`,
          REASON_INVALID_POD_FAILURE,
        );
        return done;
      }
      throw new Error(`failed to create the runner pod: ${describeError(err)}`, { cause: err });
    }
  }

  async follow(
    pass: RunnerPass,
    pod: V1Pod,
    initialRunnerId: number,
    initialRunnerName: string,
  ): Promise<Result> {
    const { obj: runner, log } = pass;
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
        await this.markAsOutdated(pass);
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
      await this.markAsOutdated(pass);
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
    await this.status.patchStatus(
      runner,
      {
        phase: EphemeralRunnerPhase.Succeeded,
        ready: false,
        reason: pod.status?.reason,
        message: pod.status?.message,
      },
      log,
    );
    await deleteRunnerOnce(this.ctx, runner);
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
      this.status.event(
        runner,
        'Warning',
        'RunnerPodFailed',
        `The runner pod failed while job ${runner.status?.jobId} was assigned; the runner is deleted and replaced`,
      );
      await deleteRunnerOnce(this.ctx, runner);
      return;
    }
    await this.deletePodAsFailed(runner, pod, log);
  }

  /** Deletes the pod and records the failure by pod UID, which counts towards the limit and the backoff. */
  private async deletePodAsFailed(runner: EphemeralRunner, pod: V1Pod, log: Logger): Promise<void> {
    if (!isBeingDeleted(pod)) {
      log.info('Deleting the failed runner pod', { podUid: pod.metadata?.uid });
      await this.ctx.deps.client
        .delete(
          PodKind,
          pod.metadata?.namespace ?? '',
          pod.metadata?.name ?? '',
          this.cleanup.podDeleteOptions(pod),
        )
        .catch(ignoreNotFound);
    }
    const uid = pod.metadata?.uid ?? '';
    const failures = { ...(runner.status?.failures ?? {}), [uid]: new Date(this.ctx.now()).toISOString() };
    this.status.event(
      runner,
      'Warning',
      'RunnerPodFailed',
      `Runner pod ${uid} failed (${Object.keys(failures).length} of ${this.ctx.maxFailures} allowed)${pod.status?.reason ? `: ${pod.status.reason}` : ''}`,
    );
    await this.status.patchStatus(
      runner,
      { failures, ready: false, reason: pod.status?.reason, message: pod.status?.message },
      log,
    );
  }

  private async markAsFailed(pass: RunnerPass, message: string, reason: string): Promise<void> {
    const { obj: runner, log } = pass;
    log.info('Marking the runner Failed', { reason });
    this.status.event(runner, 'Warning', reason, message);
    const updated = await this.status.patchStatus(
      runner,
      { phase: EphemeralRunnerPhase.Failed, reason, message },
      log,
    );
    // A failed runner stays until its set deletes it, which can take long: release the registration now.
    await this.finalization.release({ ...pass, obj: updated });
  }

  private async markAsOutdated(pass: RunnerPass): Promise<void> {
    const { obj: runner, log } = pass;
    log.info('Runner version is deprecated; marking the runner Outdated');
    this.status.event(
      runner,
      'Warning',
      Reasons.outdated,
      'The runner exited with the "version deprecated" code: update the runner image of this scale set',
    );
    const updated = await this.status.patchStatus(
      runner,
      { phase: EphemeralRunnerPhase.Outdated, reason: Reasons.outdated, message: 'Runner is deprecated' },
      log,
    );
    // Queued rather than removed here, as for a failed runner: the phase has no reason to wait on the service.
    await this.finalization.release({ ...pass, obj: updated });
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
    // `||`, not `??`: upstream's reconciler compares with "", and an empty phase is as unset as a missing one.
    let phase: EphemeralRunnerPhase = status.phase || EphemeralRunnerPhase.Pending;
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
    await this.status.patchStatus(runner, change, log);
  }
}
