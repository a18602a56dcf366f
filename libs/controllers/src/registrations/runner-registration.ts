import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import {
  EPHEMERAL_RUNNER_ACTIONS_FINALIZER,
  EPHEMERAL_RUNNER_CONTAINER_NAME,
  EphemeralRunner,
  EphemeralRunnerPhase,
  isDone,
} from '@aro/api';
import type { ActionsServiceClient, RunnerScaleSetJitRunnerConfig } from '@aro/actions';
import { isActionsNotFound, isRunnerExists } from '@aro/actions';
import { PodKind, Reader, SecretKind, TerminalError, isNotFound } from '@aro/kube';
import type { Logger } from '@aro/observability';
import { isUnusableConfig } from '../shared/config-failure';
import { isBeingDeleted, podTerminated } from '../shared/pod-state';
import { runnerIdFromSecret } from '../shared/jit-secret-fields';

/** Registration failed in a way a prompt retry can fix (the conflicting registration is gone now). */
export class RetryableRegistrationError extends Error {
  override readonly name = 'RetryableRegistrationError';
}

/** The runner's name is registered to another scale set: this EphemeralRunner can never register. */
export class FatalRegistrationError extends Error {
  override readonly name = 'FatalRegistrationError';
}

/** Resolves the Actions client once per reconcile, and only if a branch needs it. */
export type ActionsClientGetter = () => Promise<ActionsServiceClient>;

export function onceAsync<T>(fn: () => Promise<T>): () => Promise<T> {
  let result: Promise<T> | undefined;
  return () => (result ??= fn());
}

function describeError(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Whether the runner removed its own registration before its EphemeralRunner went.
 *
 * An inference from state the controller already has, because the point is to save the API call.
 * It errs towards spending a call rather than leaking a registration: Succeeded is recorded from one
 * observation, the runner container exiting 0, and an ephemeral runner that exits cleanly has
 * already deregistered on the way out. Every other phase is reachable with the registration still
 * in place: a runner that never started, was killed, failed or was found outdated did not get to.
 */
export function runnerSelfDeregistered(runner: EphemeralRunner): boolean {
  return runner.status?.phase === EphemeralRunnerPhase.Succeeded;
}

/**
 * Whether the runner has let go of its registration for good. The registration finalizer is on a
 * runner before it registers and goes only with the registration's release (its removal queued, or
 * the runner deregistered itself), so a finished runner (Succeeded, Failed, Outdated) or one being
 * deleted without it holds nothing: a registration under its name is an orphan. Such a runner can
 * stay long: its set deletes a finished one late, and another party's finalizer (a backup tool, a
 * GitOps agent) can keep a deleted one for as long as it likes. A runner neither finished nor being
 * deleted without the finalizer has not been reconciled yet, and holds whatever is under its name.
 */
export function releasedRegistration(runner: EphemeralRunner): boolean {
  if ((runner.metadata?.finalizers ?? []).includes(EPHEMERAL_RUNNER_ACTIONS_FINALIZER)) return false;
  return isDone(runner) || isBeingDeleted(runner);
}

/**
 * Asks the service for a JIT configuration, registering the runner under its EphemeralRunner's name.
 *
 * A name already registered means either a collision or an earlier reconcile whose registration
 * never reached the secret. A registration of the same scale set is ours to remove and retry; one of
 * another scale set is not, and this EphemeralRunner is deleted so the set can make another.
 */
export async function createJitConfig(
  runner: EphemeralRunner,
  getClient: ActionsClientGetter,
  log: Logger,
  signal?: AbortSignal,
): Promise<RunnerScaleSetJitRunnerConfig> {
  log.info('Creating ephemeral runner JIT config');
  let client: ActionsServiceClient;
  try {
    client = await getClient();
  } catch (err) {
    throw new Error(`failed to get actions client for generating JIT config: ${describeError(err)}`, {
      cause: err,
    });
  }
  const name = runner.metadata?.name ?? '';
  const scaleSetId = runner.spec.runnerScaleSetId;
  const workFolder =
    runner.spec.spec?.containers?.find((c) => c.name === EPHEMERAL_RUNNER_CONTAINER_NAME && c.workingDir)
      ?.workingDir ?? '';

  try {
    const jit = await client.generateJitRunnerConfig({ name, workFolder }, scaleSetId, { signal });
    log.info('Created ephemeral runner JIT config', { runnerId: jit.runner.id });
    return jit;
  } catch (err) {
    if (!isRunnerExists(err)) {
      throw new Error(`failed to generate JIT config: ${describeError(err)}`, { cause: err });
    }
  }

  log.info('A runner with this name is already registered, looking it up', { runnerName: name });
  const existing = await client.getRunnerByName(name, { signal });
  if (!existing) {
    throw new RetryableRegistrationError('runner existed, retry configuration');
  }
  log.info('Found the runner with the same name', {
    runnerId: existing.id,
    runnerScaleSetId: existing.runnerScaleSetId,
  });
  if (existing.runnerScaleSetId === scaleSetId) {
    await client.removeRunner(existing.id, { signal });
    log.info('Removed the runner with the same name, retrying the registration');
    throw new RetryableRegistrationError('runner existed belonging to the scale set, retry configuration');
  }
  throw new FatalRegistrationError(
    `runner name ${name} is registered to runner scale set ${existing.runnerScaleSetId}, not ${scaleSetId}`,
  );
}

/**
 * The ID of the registration the runner holds with the Actions service, or 0 when it never got one.
 *
 * The common answer comes from the status and costs nothing. A runner whose status never recorded
 * an ID may still be registered: the registration's ID reaches the jitconfig secret before the
 * status patch that publishes it, so the secret is read to recover it. Without a secret the service
 * is asked by name before concluding there is no registration, because the service registers the
 * runner just before the secret is written. Any other doubt is an error, never 0: answering 0 would
 * drop the finalizer and lose the last record of a registration that exists.
 */
export async function registeredRunnerId(
  runner: EphemeralRunner,
  secrets: Reader,
  getClient: ActionsClientGetter,
  log: Logger,
  signal?: AbortSignal,
): Promise<number> {
  const statusId = runner.status?.runnerId ?? 0;
  if (statusId < 0) throw new Error(`invalid runner ID in status: ${statusId}`);
  if (statusId > 0) return statusId;

  const namespace = runner.metadata?.namespace ?? '';
  const name = runner.metadata?.name ?? '';
  let secret: V1Secret | undefined;
  try {
    secret = await secrets.get<V1Secret>(SecretKind, namespace, name);
  } catch (err) {
    if (!isNotFound(err)) {
      throw new Error(
        `failed to read the jitconfig secret of a runner without a recorded ID: ${describeError(err)}`,
        {
          cause: err,
        },
      );
    }
  }
  if (secret) {
    const id = runnerIdFromSecret(secret);
    log.info('Recovered the runner ID from the jitconfig secret', { runnerId: id });
    return id;
  }

  let client: ActionsServiceClient;
  try {
    client = await getClient();
  } catch (err) {
    // No registration can have been made through a configuration no client can be built from (an
    // invalid URL, a missing Secret, a refused credential): the registration this runner would hold
    // is one it never got. Holding the finalizer until someone fixes the configuration would make
    // the runner impossible to delete, for a registration that does not exist.
    if (isUnusableConfig(err)) {
      log.info(
        'No Actions client can be built for a runner without a recorded ID or jitconfig secret; it never registered',
        { reason: describeError(err) },
      );
      return 0;
    }
    throw new Error(
      `failed to get actions client for a runner without a recorded ID or jitconfig secret: ${describeError(err)}`,
      { cause: err },
    );
  }
  const existing = await client.getRunnerByName(name, { signal });
  if (!existing) {
    log.info('No runner registration found for a runner without a recorded ID or jitconfig secret');
    return 0;
  }
  if (existing.runnerScaleSetId !== runner.spec.runnerScaleSetId) {
    // Terminal: no retry changes which scale set holds the name; the next change to the runner (or a
    // manual removal of that registration) brings it back.
    throw new TerminalError(
      `runner registration ${existing.id} found by name belongs to runner scale set ${existing.runnerScaleSetId}, expected ${runner.spec.runnerScaleSetId}`,
    );
  }
  if (existing.id <= 0) throw new Error(`invalid runner ID returned by the Actions service: ${existing.id}`);
  log.info('Recovered the runner ID from the Actions service', { runnerId: existing.id });
  return existing.id;
}

/**
 * Removes the registration of a runner whose pod may still be executing a job, and reports whether
 * it did. A runner without such a pod is left alone (false).
 *
 * The pod is read uncached: the cache can miss a newly created pod or still show its terminated
 * predecessor, and neither is safe evidence for dropping the finalizer's protection. The service
 * refuses to remove a runner executing a job; that refusal is thrown as is (JobStillRunning) so the
 * caller keeps the pod. Nothing waits on the service when the pod is gone, going, or has stopped.
 */
export async function removeRunnerOfLivePod(
  runner: EphemeralRunner,
  runnerId: number,
  apiReader: Reader | undefined,
  getClient: ActionsClientGetter,
  log: Logger,
  signal?: AbortSignal,
): Promise<boolean> {
  if (!apiReader) {
    throw new Error(
      'no uncached reader is configured: cannot confirm the runner pod state without the cache',
    );
  }
  let pod: V1Pod;
  try {
    pod = await apiReader.get<V1Pod>(PodKind, runner.metadata?.namespace ?? '', runner.metadata?.name ?? '');
  } catch (err) {
    if (isNotFound(err)) return false;
    throw new Error(`failed to get the runner pod: ${describeError(err)}`, { cause: err });
  }
  if (isBeingDeleted(pod) || podTerminated(pod)) return false;

  let client: ActionsServiceClient;
  try {
    client = await getClient();
  } catch (err) {
    throw new Error(`failed to get actions client: ${describeError(err)}`, { cause: err });
  }
  try {
    await client.removeRunner(runnerId, { signal });
    log.info('Removed the runner of a live pod from the service', { runnerId });
  } catch (err) {
    if (!isActionsNotFound(err)) throw err;
    log.info('Runner is already removed from the service', { runnerId });
  }
  return true;
}
