import { EPHEMERAL_RUNNER_ACTIONS_FINALIZER, EphemeralRunner, hasContainerHookConfigured } from '@aro/api';
import { isJobStillRunning } from '@aro/actions';
import {
  LazyCopy,
  type Released,
  type Result,
  isConflict,
  isNotFound,
  released,
  hasFinalizer,
  removeFinalizer,
  requeueAfter,
} from '@aro/kube';
import type { Logger } from '@aro/observability';
import type { RunnerCleanup } from './cleanup';
import { BUSY_RUNNER_REQUEUE_MS, type RunnerContext, type RunnerPass, runnerKey } from './reconciler-context';
import {
  ActionsClientGetter,
  onceAsync,
  registeredRunnerId,
  removeRunnerOfLivePod,
  runnerSelfDeregistered,
} from '../registrations/runner-registration';
import type { RunnerStatusWriter } from './status-writer';
import { describeError } from '../shared/describe-error';

/**
 * A runner's registration on the Actions service and its release: the cleanup of a runner being
 * deleted (under the finalizer helper), and the release of a finished runner's registration.
 */
export class RunnerFinalization {
  /** The UID of each runner (by namespace/name) whose removal this process has queued. */
  private readonly queuedByThisProcess = this.ctx.memory.slot<string>('removal queued');

  constructor(
    private readonly ctx: RunnerContext,
    private readonly status: RunnerStatusWriter,
    private readonly cleanup: RunnerCleanup,
    /** Called each time a runner being deleted keeps its pod because the service still holds its job. */
    private readonly onBusyPodKept?: (runner: EphemeralRunner, log: Logger) => Promise<void>,
  ) {}

  /**
   * The cleanup of a runner being deleted: release its registration, delete its pod and secret. The
   * finalizer helper then drops the finalizers in one patch, computed from the runner as read.
   */
  async cleanUp(pass: RunnerPass): Promise<Result | Released> {
    const { obj: runner, signal, log } = pass;
    const copy = new LazyCopy(runner);
    let actionsFinalizerReleased = false;
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
          this.ctx.deps.actions.getActionsClient(runner, signal),
        );
        // Resolved before the finalizer goes: recovering an ID the status never recorded reads the
        // jitconfig secret, which the cleanup below deletes. The secret this controller wrote for the
        // runner already told it that ID, and saves the read.
        const known = runner.status?.runnerId ? undefined : this.ctx.jitSecrets.identity(runner);
        runnerId =
          known?.runnerId ?? (await registeredRunnerId(runner, this.ctx.deps.client, getClient, log, signal));
        if (runnerId !== 0) {
          try {
            if (
              await removeRunnerOfLivePod(runner, runnerId, this.ctx.deps.apiReader, getClient, log, signal)
            )
              runnerId = 0;
          } catch (err) {
            if (!isJobStillRunning(err)) {
              throw new Error(
                `failed to remove the runner of a live pod from the service: ${describeError(err)}`,
                {
                  cause: err,
                },
              );
            }
            log.info('Runner is still executing a job; keeping its pod', {
              runnerId,
              requeueAfterMs: BUSY_RUNNER_REQUEUE_MS,
            });
            await this.onBusyPodKept?.(runner, log);
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
      actionsFinalizerReleased = removed;
      if (removed && runnerId !== 0) {
        // Pinned to the resourceVersion read: from a cache that is behind (the registration already
        // released by a write it has not seen yet) the patch conflicts instead of queueing it twice.
        try {
          await this.status.patch(runner, copy.mergePatch({ optimisticLock: true }));
        } catch (err) {
          if (!isConflict(err)) throw err;
          log.debug(
            'The cached runner is behind the API server; looking again before releasing its registration',
          );
          return { requeue: true };
        }
      }
      if (runnerId !== 0) this.queueRemoval(runner, runnerId);
    } else {
      // Released earlier, by this process (queued, nothing to do) or by one that died before its
      // queue reached the service: then the runner going now would leave the registration to the
      // orphan sweep, minutes later. Queued again while the runner still names it.
      this.requeueLostRemoval(runner, log);
    }

    log.info('Finalizing the ephemeral runner');
    await this.cleanup.resources(runner, log);
    if (hasContainerHookConfigured(runner)) {
      log.info('Runner has container hooks configured; cleaning up their pods and secrets');
      await this.cleanup.containerHookResources(runner, log);
    }

    // The registration finalizer, when released above, goes with the main one (it is already gone
    // from the object when it was patched away, and must not come back with a list read before).
    return released(actionsFinalizerReleased ? [EPHEMERAL_RUNNER_ACTIONS_FINALIZER] : []);
  }

  /**
   * A finished runner (Failed, Outdated) or one being deleted whose registration finalizer is already
   * gone had its removal queued by some process, but the queue is in memory: a crash after the
   * finalizer went lost it, and the registration would stay until the orphan sweep finds it, minutes
   * after the runner is gone. Queued again here once per process and runner UID; a removal the service
   * finds already done counts as done, runners this process queued itself are not asked about twice,
   * and a runner that deregistered itself (exit 0) costs nothing. So the steady state pays no call:
   * only the first look of a new process at a runner another one released.
   */
  requeueLostRemoval(runner: EphemeralRunner, log: Logger): void {
    if (hasFinalizer(runner, EPHEMERAL_RUNNER_ACTIONS_FINALIZER) || runnerSelfDeregistered(runner)) return;
    const runnerId = runner.status?.runnerId ?? 0;
    const uid = runner.metadata?.uid;
    if (runnerId <= 0 || !uid || this.queuedByThisProcess.get(runnerKey(runner)) === uid) return;
    log.info('Queueing the removal of a finished runner again, in case a restart lost it', { runnerId });
    this.queueRemoval(runner, runnerId);
  }

  private queueRemoval(runner: EphemeralRunner, runnerId: number): void {
    const uid = runner.metadata?.uid;
    if (uid) this.queuedByThisProcess.set(runnerKey(runner), uid);
    this.ctx.deps.unregistrations.push(runner, runnerId);
  }

  /**
   * Releases the runner's registration: hands its removal to the queue and drops the finalizer that
   * exists to make it happen. Dropping the finalizer is what keeps this to one removal (the deletion
   * that follows would queue it again) and what makes it safe to call twice: a released runner is
   * left alone.
   */
  async release(pass: RunnerPass): Promise<EphemeralRunner> {
    const { obj: runner, signal, log } = pass;
    if (!hasFinalizer(runner, EPHEMERAL_RUNNER_ACTIONS_FINALIZER)) return runner;
    let runnerId = 0;
    if (runnerSelfDeregistered(runner)) {
      log.info('Runner exited successfully and deregistered itself; skipping its removal from the service');
    } else {
      runnerId = await registeredRunnerId(
        runner,
        this.ctx.deps.client,
        onceAsync(() => this.ctx.deps.actions.getActionsClient(runner, signal)),
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
      updated = await this.status.patch(runner, copy.mergePatch({ optimisticLock: true }));
    } catch (err) {
      // NotFound: another actor removed the finalizer and the runner finished deleting. Its
      // registration is still queued, as upstream's reconciler does: nothing else will ever remove it, and a
      // removal the service finds already done costs one answer. A conflict is returned as is for the
      // caller to look again. Any other failure leaves the removal to the retry rather than queueing
      // it twice.
      if (isNotFound(err)) {
        if (runnerId !== 0) this.queueRemoval(runner, runnerId);
        return runner;
      }
      if (isConflict(err)) throw err;
      throw new Error(`failed to remove the runner registration finalizer: ${describeError(err)}`, {
        cause: err,
      });
    }
    if (runnerId !== 0) this.queueRemoval(runner, runnerId);
    return updated;
  }
}
