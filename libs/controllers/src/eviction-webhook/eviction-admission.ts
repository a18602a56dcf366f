import type { V1Pod } from '@kubernetes/client-node';
import { EphemeralRunner, EphemeralRunnerKind, hasJob } from '@aro/api';
import { type ActionsServiceClient, isActionsNotFound, isJobStillRunning } from '@aro/actions';
import { type KubeApi, PodKind, isConflict, isNotFound } from '@aro/kube';
import type { Logger } from '@aro/observability';
import type { EventRecorder } from '../events/event-recorder';
import { busyMarksRemoval } from '../shared/busy-marks';
import { isBeingDeleted, podTerminated, runnerProcessExited } from '../shared/pod-state';
import { onceAsync, registeredRunnerId } from '../registrations/runner-registration';
import type { ActionsClientProvider } from '../registrations/unregistration-queue';
import { describeError } from '../shared/describe-error';
import { type AdmissionRequest, type AdmissionResponse, EVICTION_REFUSED_CODE } from './admission-review';

/** The Event reason on a runner whose registration the webhook removed to let its pod be evicted. */
export const REASON_RUNNER_EVICTION_ADMITTED = 'RunnerEvictionAdmitted';

export interface EvictionAdmissionDeps {
  /** Uncached reads (the pod and runner as they are now) and the runner's deletion. */
  client: KubeApi;
  actions: ActionsClientProvider;
  events?: Pick<EventRecorder, 'record'>;
  logger: Logger;
  /** How long the service's "executing a job" stands for a runner; default {@link BUSY_ANSWER_STANDS_MS}. */
  busyAnswerStandsMs?: number;
  /** The clock of the busy answers' memory (tests). */
  now?: () => number;
}

/**
 * How long the service's "executing a job" stands for a runner before the service is asked again.
 * `kubectl drain` retries a refused eviction every 5 s; asking each time cost one Actions call per busy
 * pod per retry (a drain of 20 busy pods through 10 minutes of jobs: 2,400 calls, half an installation's
 * hourly budget). A job that ends within the window leaves its runner's pod to exit on its own, which
 * ends the eviction's need; at worst a drain waits this much longer for a runner still finishing.
 */
export const BUSY_ANSWER_STANDS_MS = 30_000;

/**
 * The decision on one eviction of a pod: the registration of an idle runner is removed on the Actions
 * service before its pod may be evicted, so that the service cannot assign a job to a runner being
 * killed; a runner the service says holds a job keeps its pod.
 *
 * The PodDisruptionBudget over the busy label (eviction-protection.ts) refuses a busy pod only once the
 * controller has heard of the job; between the service assigning a job and that patch, only the
 * service knows. So the service is asked, and its refusal to remove a runner executing a job
 * (JobStillRunning) is the refusal of the eviction. A runner the service no longer holds cannot get a
 * job: it is deleted as a whole (its finalizer finds the registration gone), so that nothing registers
 * it again for the pod being evicted, and its set replaces it.
 *
 * A runner the controller knows is busy is asked about too, but only on a real eviction: when the
 * service lets it go, its job has completed while the runner process is still finishing (post-job
 * steps, log upload), and nothing in the pod can take another job. Its busy marks are lifted before
 * the answer, since the Eviction API checks the budget after admission; so a drain need not wait for
 * the process to exit. On the job path this costs nothing; a drain's retries of a busy pod (every 5 s
 * for kubectl) cost one service call per {@link BUSY_ANSWER_STANDS_MS} and pod: the service's
 * JobStillRunning is remembered for the runner that long and answers the retries in between.
 *
 * Every answer that is not an allow is a 429, which `kubectl drain` and the autoscalers retry; the
 * webhook's failurePolicy is Ignore, so a controller that cannot be reached leaves the budget as the
 * only protection instead of blocking every drain.
 */
export class EvictionAdmission {
  /** Runner uid -> until when the service's last "executing a job" for it stands. */
  private readonly busyUntil = new Map<string, number>();

  constructor(private readonly deps: EvictionAdmissionDeps) {}

  private now(): number {
    return (this.deps.now ?? Date.now)();
  }

  /** Whether the service said moments ago that this runner executes a job (see BUSY_ANSWER_STANDS_MS). */
  private recentlyBusy(runnerUid: string): boolean {
    const until = this.busyUntil.get(runnerUid);
    if (until === undefined) return false;
    if (until > this.now()) return true;
    this.busyUntil.delete(runnerUid);
    return false;
  }

  private rememberBusy(runnerUid: string): void {
    const now = this.now();
    // Entries of runners whose drains ended go with the next busy answer: the map holds busy pods only.
    for (const [uid, until] of this.busyUntil) if (until <= now) this.busyUntil.delete(uid);
    this.busyUntil.set(runnerUid, now + (this.deps.busyAnswerStandsMs ?? BUSY_ANSWER_STANDS_MS));
  }

  async review(request: AdmissionRequest, signal: AbortSignal): Promise<AdmissionResponse> {
    const allow = (warnings?: string[]): AdmissionResponse => ({
      uid: request.uid,
      allowed: true,
      ...(warnings ? { warnings } : {}),
    });
    const refuse = (message: string): AdmissionResponse => ({
      uid: request.uid,
      allowed: false,
      status: { code: EVICTION_REFUSED_CODE, reason: 'TooManyRequests', message },
    });
    if (request.resource?.resource !== 'pods' || request.subResource !== 'eviction') return allow();
    const namespace = request.namespace ?? '';
    const podName = request.name ?? '';
    const log = this.deps.logger.child({ namespace, pod: podName, admission: request.uid });
    try {
      return await this.decide(namespace, podName, request.dryRun === true, signal, log, allow, refuse);
    } catch (err) {
      log.warn('Refusing the eviction of a runner pod: its registration could not be settled', {
        error: describeError(err),
      });
      return refuse(
        `the eviction of runner pod ${namespace}/${podName} is refused until its runner's registration is removed from the Actions service (retry): ${describeError(err)}`,
      );
    }
  }

  private async decide(
    namespace: string,
    podName: string,
    dryRun: boolean,
    signal: AbortSignal,
    log: Logger,
    allow: (warnings?: string[]) => AdmissionResponse,
    refuse: (message: string) => AdmissionResponse,
  ): Promise<AdmissionResponse> {
    const { client } = this.deps;
    const pod = await readOrUndefined(() => client.get<V1Pod>(PodKind, namespace, podName));
    // Gone: the Eviction API answers 404 itself. Terminating, stopped, or its runner process exited (a
    // sidecar lingering): nothing in it can execute a job, and the controller settles the registration.
    if (!pod || isBeingDeleted(pod) || podTerminated(pod) || runnerProcessExited(pod)) {
      return allow();
    }
    const owner = pod.metadata?.ownerReferences?.find(
      (o) => o.kind === EphemeralRunnerKind.kind && o.apiVersion.startsWith(`${EphemeralRunnerKind.group}/`),
    );
    if (!owner) return allow();
    const runner = await readOrUndefined(() =>
      client.get<EphemeralRunner>(EphemeralRunnerKind, namespace, owner.name),
    );
    // The runner that made this pod is gone: its finalizer released the registration before it went.
    if (!runner || runner.metadata?.uid !== owner.uid || !runner.spec) return allow();
    const runnerName = `${namespace}/${owner.name}`;
    const jobId = hasJob(runner) ? runner.status?.jobId : undefined;
    const refuseBusy = () =>
      refuse(`runner ${runnerName} is executing job ${jobId}; its pod can be evicted once the job ends`);
    // A dry run may not ask the service to let go, which is the only way to learn the job has ended.
    if (jobId !== undefined && dryRun) return refuseBusy();
    const runnerUid = runner.metadata?.uid ?? '';
    const refuseJobOnService = (runnerId: number | string) =>
      jobId !== undefined
        ? refuseBusy()
        : refuse(
            `runner ${runnerName} (id ${runnerId}) is executing a job on the Actions service; its pod can be evicted once the job ends`,
          );
    if (this.recentlyBusy(runnerUid)) {
      log.debug('Refusing the eviction: the Actions service said moments ago the runner executes a job');
      return refuseJobOnService(runner.status?.runnerId ?? 'unknown');
    }

    const getClient = onceAsync(() => this.deps.actions.getActionsClient(runner, signal));
    const runnerId = await registeredRunnerId(runner, client, getClient, log, signal);
    // Never registered: the service cannot assign it anything.
    if (runnerId === 0) return allow();
    if (dryRun) return allow();

    let actions: ActionsServiceClient;
    try {
      actions = await getClient();
    } catch (err) {
      throw new Error(`failed to get the Actions client: ${describeError(err)}`, { cause: err });
    }
    try {
      await actions.removeRunner(runnerId, { signal });
      log.info('Removed the registration of an idle runner before its pod is evicted', { runnerId });
    } catch (err) {
      if (isJobStillRunning(err)) {
        log.info('Refusing the eviction: the Actions service says the runner is executing a job', {
          runnerId,
          jobId,
        });
        this.rememberBusy(runnerUid);
        return refuseJobOnService(runnerId);
      }
      if (!isActionsNotFound(err)) {
        throw new Error(
          `failed to remove runner ${runnerId} from the Actions service: ${describeError(err)}`,
          {
            cause: err,
          },
        );
      }
      log.info('The registration of the runner is already removed', { runnerId });
    }

    // The job reported on this runner has ended on the service (it let the runner go), though the
    // runner process has not exited yet: its busy marks go first, or the busy runners'
    // PodDisruptionBudget, which the Eviction API checks after this answer, would still refuse.
    if (jobId !== undefined) await this.liftBusyMarks(pod, runnerName);

    // The runner goes as a whole: were the eviction to fail after this answer, its pod would still run
    // from a registration the service no longer has.
    try {
      await client.delete(EphemeralRunnerKind, namespace, owner.name);
    } catch (err) {
      if (!isNotFound(err)) {
        throw new Error(`failed to delete EphemeralRunner ${runnerName}: ${describeError(err)}`, {
          cause: err,
        });
      }
    }
    this.deps.events?.record(
      runner,
      'Normal',
      REASON_RUNNER_EVICTION_ADMITTED,
      `The pod is being evicted; runner ${runnerId} was removed from the Actions service first, and the set replaces the runner`,
    );
    return allow([
      jobId !== undefined
        ? `runner ${runnerName} (id ${runnerId}) had finished job ${jobId}: its registration is removed and the runner replaced`
        : `runner ${runnerName} (id ${runnerId}) was idle: its registration is removed and the runner replaced`,
    ]);
  }

  private async liftBusyMarks(pod: V1Pod, runnerName: string): Promise<void> {
    const { namespace = '', name = '', uid = '' } = pod.metadata ?? {};
    try {
      await this.deps.client.mergePatch<V1Pod>(PodKind, namespace, name, busyMarksRemoval(uid));
    } catch (err) {
      // Gone or replaced since it was read: nothing of this runner's is left to protect.
      if (isNotFound(err) || isConflict(err)) return;
      throw new Error(`failed to lift the busy marks of runner ${runnerName}'s pod: ${describeError(err)}`, {
        cause: err,
      });
    }
  }
}

async function readOrUndefined<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
