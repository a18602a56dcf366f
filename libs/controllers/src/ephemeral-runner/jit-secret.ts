import type { V1Secret } from '@kubernetes/client-node';
import {
  EPHEMERAL_RUNNER_ACTIONS_FINALIZER,
  EphemeralRunner,
  EphemeralRunnerKind,
  JitSecretKeys,
} from '@aro/api';
import {
  LazyCopy,
  PodKind,
  type Result,
  SecretKind,
  isNotFound,
  done,
  removeFinalizer,
  requeueAfter,
} from '@aro/kube';
import type { Logger } from '@aro/observability';
import { REGISTRATION_RETRY_MS, type RunnerContext, type RunnerPass } from './reconciler-context';
import { isUnfixableByRetry } from '../shared/config-failure';
import {
  FatalRegistrationError,
  RetryableRegistrationError,
  createJitConfig,
} from '../registrations/runner-registration';
import type { JitIdentity } from './known-jit-secrets';
import { buildJitSecret } from './runner-resources';
import { runnerIdFromSecret, runnerNameFromSecret } from '../shared/jit-secret-fields';
import type { RunnerStatusWriter } from './status-writer';
import { describeError } from '../shared/describe-error';

/** The secret as the API holds it now, and the registration it records while the status has none. */
export type FreshJitSecret = { secret: V1Secret; identity?: JitIdentity } | { result: Result };

/** The runner's registration, as the jitconfig secret the runner pod starts from. */
export class JitSecrets {
  constructor(
    private readonly ctx: RunnerContext,
    private readonly status: RunnerStatusWriter,
  ) {}

  /**
   * The secret read from the API (registering the runner and creating it when it is missing), and,
   * while the status records no runner ID, the registration it holds. A secret whose runner ID is
   * unusable is replaced when no pod uses it (see replaceCorrupt), which ends the pass.
   */
  async fresh(pass: RunnerPass): Promise<FreshJitSecret> {
    const { obj: runner, log } = pass;
    const ensured = await this.ensure(pass);
    if ('result' in ensured) return ensured;
    const secret = ensured.secret;
    // As upstream's reconciler: the ID in the secret is looked at only while the status has none to say.
    if (runner.status?.runnerId) return { secret };
    let identity: JitIdentity;
    try {
      identity = { runnerId: runnerIdFromSecret(secret), runnerName: runnerNameFromSecret(secret) };
    } catch (err) {
      return { result: await this.replaceCorrupt(runner, secret, err, log) };
    }
    this.ctx.jitSecrets.remember(runner, identity);
    return { secret, identity };
  }

  async ensure(pass: RunnerPass): Promise<{ secret: V1Secret } | { result: Result }> {
    const { obj: runner, signal, log } = pass;
    const { namespace = '', name = '' } = runner.metadata ?? {};
    try {
      return { secret: await this.ctx.deps.client.get<V1Secret>(SecretKind, namespace, name) };
    } catch (err) {
      if (!isNotFound(err))
        throw new Error(`failed to fetch the jitconfig secret: ${describeError(err)}`, { cause: err });
    }

    let jit;
    try {
      jit = await createJitConfig(
        runner,
        () => this.ctx.deps.actions.getActionsClient(runner, signal),
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
        this.status.event(runner, 'Warning', 'RegistrationConflict', err.message);
        // Names are unique across the service's scope, so a name held by another scale set means this
        // runner holds no registration: its registration finalizer has nothing to release. Left in
        // place it would hold the deletion forever, since the finalizer branch must treat a foreign
        // registration found by name as an error rather than as "never registered".
        const copy = new LazyCopy(runner);
        removeFinalizer(copy.mutate(), EPHEMERAL_RUNNER_ACTIONS_FINALIZER);
        await this.status.patch(runner, copy.mergePatch());
        await this.ctx.deps.client.delete(EphemeralRunnerKind, namespace, name);
        return { result: done };
      }
      this.status.event(runner, 'Warning', 'RegistrationFailed', describeError(err));
      if (isUnfixableByRetry(err)) {
        // A refused credential or an invalid config URL stays so until a person changes the Secret or
        // the spec: retried at the controller's error backoff it asked the service a dozen times in
        // seconds for one runner. Spaced per runner instead, from 5 s up to 5 min.
        const wait = this.ctx.slowRetries.next(`${namespace}/${name}`);
        log.warn('Registration failed in a way only a configuration change can fix; retrying slowly', {
          reason: describeError(err),
          requeueAfterMs: wait,
        });
        return { result: requeueAfter(wait) };
      }
      throw err;
    }

    log.info('Creating the jitconfig secret');
    try {
      const secret = await this.ctx.deps.client.create<V1Secret>(SecretKind, buildJitSecret(runner, jit));
      log.info('Created the jitconfig secret', { runnerId: jit.runner.id });
      return { secret };
    } catch (err) {
      throw new Error(`failed to create the jitconfig secret: ${describeError(err)}`, { cause: err });
    }
  }

  /**
   * A secret whose runner ID is unusable is replaced only when no pod exists: replacing a secret a
   * pod already consumed could tie a new registration to a live runner. Only the uncached reader is
   * evidence that no pod exists; without one the controller refuses.
   */
  async replaceCorrupt(
    runner: EphemeralRunner,
    secret: V1Secret,
    cause: unknown,
    log: Logger,
  ): Promise<Result> {
    const { namespace = '', name = '' } = runner.metadata ?? {};
    if (!this.ctx.deps.apiReader) {
      throw new Error(
        `cannot safely replace the jitconfig secret without an uncached reader: ${describeError(cause)}`,
        {
          cause,
        },
      );
    }
    try {
      await this.ctx.deps.apiReader.get(PodKind, namespace, name);
    } catch (podErr) {
      if (!isNotFound(podErr)) {
        throw new Error(
          `failed to check the runner pod before replacing an invalid jitconfig secret: ${describeError(podErr)}`,
          { cause: podErr },
        );
      }
      log.warn('Deleting the corrupted jitconfig secret; no pod uses it', { reason: describeError(cause) });
      this.status.event(
        runner,
        'Warning',
        'CorruptJitConfigSecret',
        `${describeError(cause)}; replacing the secret`,
      );
      await this.ctx.deps.client.delete(SecretKind, namespace, name, {
        preconditions: secret.metadata?.uid ? { uid: secret.metadata.uid } : undefined,
      });
      this.ctx.jitSecrets.secretReplaced(`${namespace}/${name}`);
      return requeueAfter(REGISTRATION_RETRY_MS);
    }
    // The pod exists, so the secret may be what a live runner started from: neither is touched. Only
    // a person (or the pod's end) can settle it, so the runner is looked at again on the slow backoff,
    // with one Event that folds its repeats and one line per look, instead of an error per retry.
    const where = `${namespace}/${name}`;
    this.status.event(
      runner,
      'Warning',
      'CorruptJitConfigSecret',
      `jitconfig secret ${where} key "${JitSecretKeys.runnerId}": ${describeError(cause)}; its pod exists, so both are kept`,
    );
    const wait = this.ctx.slowRetries.next(where);
    log.warn('The jitconfig secret is corrupt and its pod exists; keeping both', {
      secret: where,
      key: JitSecretKeys.runnerId,
      reason: describeError(cause),
      requeueAfterMs: wait,
    });
    return requeueAfter(wait);
  }
}
