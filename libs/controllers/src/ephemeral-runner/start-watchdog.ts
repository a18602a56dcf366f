import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { EphemeralRunnerPhase } from '@aro/api';
import { type Result, done, requeueAfter } from '@aro/kube';
import type { RunnerFinalization } from './finalize';
import { isBeingDeleted } from '../shared/pod-state';
import type { RunnerContext, RunnerPass } from './reconciler-context';
import type { RunnerStatusWriter } from './status-writer';

/** How long a runner pod may take to reach Running before the watchdog fails the runner. */
export const DEFAULT_RUNNER_START_TIMEOUT_MS = 10 * 60_000;

/** The Event reason of a runner the watchdog failed; the status carries the kubelet's own reason. */
export const REASON_RUNNER_START_FAILED = 'RunnerStartFailed';

/** The status reason when the kubelet gave none (a pod never scheduled nor reported on, for instance). */
export const REASON_START_TIMEOUT = 'StartTimeout';

/**
 * Waiting reasons the kubelet never leaves by itself: a malformed image reference, and an image
 * that is not on the node under `imagePullPolicy: Never`. Waiting out the timeout would only hold the
 * slot longer. Everything else may clear up (a registry back online, a Secret or ConfigMap created, a
 * node provisioned), so it gets the whole timeout.
 */
export const PERMANENT_WAITING_REASONS: ReadonlySet<string> = new Set([
  'InvalidImageName',
  'ErrImageNeverPull',
]);

/** Waiting reasons of a pod that is making progress; they explain nothing when it times out. */
const PROGRESS_REASONS: ReadonlySet<string> = new Set(['ContainerCreating', 'PodInitializing']);

/** What the watchdog makes of a runner pod. */
export type StartVerdict =
  /** Running, or past it, or going away: the watchdog has nothing more to say. */
  | { state: 'started' }
  /** Still starting; the watchdog must look again by the deadline. */
  | { state: 'starting'; remainingMs: number }
  /** Will not start: the kubelet's (or scheduler's) reason and message. */
  | { state: 'stalled'; reason: string; message: string; permanent: boolean };

interface Cause {
  reason: string;
  message: string;
}

function waitingCause(
  statuses: readonly V1ContainerStatus[] | undefined,
): (Cause & { permanent: boolean }) | undefined {
  let found: (Cause & { permanent: boolean }) | undefined;
  for (const status of statuses ?? []) {
    const reason = status.state?.waiting?.reason;
    if (!reason || PROGRESS_REASONS.has(reason)) continue;
    const cause = {
      reason,
      message: `container ${status.name}: ${status.state?.waiting?.message ?? reason}`,
      permanent: PERMANENT_WAITING_REASONS.has(reason),
    };
    if (cause.permanent) return cause;
    found ??= cause;
  }
  return found;
}

/** Why a pod is not running, as the kubelet or the scheduler put it. */
function stallCause(pod: V1Pod): (Cause & { permanent: boolean }) | undefined {
  const waiting =
    waitingCause(pod.status?.initContainerStatuses) ?? waitingCause(pod.status?.containerStatuses);
  if (waiting) return waiting;
  const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
  if (scheduled?.status === 'False') {
    return {
      reason: scheduled.reason || 'Unschedulable',
      message: scheduled.message || 'the pod was not scheduled',
      permanent: false,
    };
  }
  if (pod.status?.reason) {
    return { reason: pod.status.reason, message: pod.status.message ?? pod.status.reason, permanent: false };
  }
  return undefined;
}

function formatDuration(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds % 60 !== 0 || seconds < 60) return `${seconds}s`;
  return `${seconds / 60}m`;
}

/**
 * Judges whether a runner pod started. Started means the pod reached Running (or ended: what happened
 * then is the pod follower's business); a pod being deleted is not the watchdog's either. A pod still
 * Pending is given `timeoutMs` from its creation, unless a container waits for a reason the kubelet
 * calls permanent.
 */
export function judgeStart(pod: V1Pod, now: number, timeoutMs: number): StartVerdict {
  const phase = pod.status?.phase;
  if (phase === 'Running' || phase === 'Succeeded' || phase === 'Failed' || isBeingDeleted(pod)) {
    return { state: 'started' };
  }
  const cause = stallCause(pod);
  if (cause?.permanent) return { state: 'stalled', ...cause };
  const created = pod.metadata?.creationTimestamp ? new Date(pod.metadata.creationTimestamp).getTime() : now;
  const remainingMs = created + timeoutMs - now;
  if (remainingMs > 0) return { state: 'starting', remainingMs };
  const timeout = `the runner pod did not reach Running within ${formatDuration(timeoutMs)}`;
  return cause
    ? { state: 'stalled', reason: cause.reason, message: `${cause.message} (${timeout})`, permanent: false }
    : {
        state: 'stalled',
        reason: REASON_START_TIMEOUT,
        message: `${timeout} (phase ${phase ?? 'unknown'}, no reason reported)`,
        permanent: false,
      };
}

/** The sooner of two requeues; a result without one takes the other. */
export function soonerRequeue(result: Result, ms: number): Result {
  if (result.requeueAfterMs !== undefined && result.requeueAfterMs <= ms) return result;
  if (result.requeue && result.requeueAfterMs === undefined) return result;
  return { ...result, ...requeueAfter(ms) };
}

/**
 * The start watchdog: a runner whose pod never reaches Running is marked Failed with the kubelet's
 * reason and message, so that it stops holding a slot of its set's `maxRunners` (it has no job and
 * may have no runner ID, so scale-down never picks it). Failed is terminal: the finished branch then
 * deletes its pod and secret, its registration is released here, and its EphemeralRunnerSet deletes
 * it and replaces it after the set's failure backoff, so a broken image does not churn pods.
 *
 * The deadline is kept as a requeue on the runner, never as a timer of its own: the pod's creation
 * time is in the API, so a controller that restarts computes the same deadline on its first pass.
 */
export class RunnerStartWatchdog {
  constructor(
    private readonly ctx: RunnerContext,
    private readonly status: RunnerStatusWriter,
    private readonly finalization: RunnerFinalization,
    private readonly timeoutMs: number,
  ) {}

  /**
   * Runs `follow` (the pod follower) unless the pod stalled, in which case the runner is failed
   * instead; while the pod starts, the result carries a requeue at its deadline.
   */
  async guard(pass: RunnerPass, pod: V1Pod, follow: () => Promise<Result>): Promise<Result> {
    const verdict = judgeStart(pod, this.ctx.now(), this.timeoutMs);
    if (verdict.state === 'stalled') {
      await this.fail(pass, pod, verdict);
      return done;
    }
    const result = await follow();
    return verdict.state === 'starting' ? soonerRequeue(result, verdict.remainingMs) : result;
  }

  private async fail(
    pass: RunnerPass,
    pod: V1Pod,
    verdict: { reason: string; message: string; permanent: boolean },
  ): Promise<void> {
    const { obj: runner, log } = pass;
    log.warn('The runner pod did not start; marking the runner Failed', {
      reason: verdict.reason,
      message: verdict.message,
      permanent: verdict.permanent,
      podUid: pod.metadata?.uid,
      timeoutMs: this.timeoutMs,
    });
    this.status.event(
      runner,
      'Warning',
      REASON_RUNNER_START_FAILED,
      `The runner pod did not start (${verdict.reason}): ${verdict.message}; the runner is failed and its set replaces it`,
    );
    const updated = await this.status.patchStatus(
      runner,
      { phase: EphemeralRunnerPhase.Failed, ready: false, reason: verdict.reason, message: verdict.message },
      log,
    );
    // A pod that never ran never took a job: the registration goes now, not when the set deletes the runner.
    await this.finalization.release({ ...pass, obj: updated });
  }
}
