import {
  EPHEMERAL_RUNNER_SET_FINALIZER,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
  runnerProxySecretName,
} from '@aro/api';
import {
  Result,
  SecretKind,
  isNotFound,
  finalizersPatch,
  hasFinalizer,
  withoutFinalizers,
  done,
  requeueAfter,
  deleteIgnoringNotFound,
} from '@aro/kube';
import type { Logger } from '@aro/observability';
import { runnersByState } from './runner-states';
import { type RunnerSetContext, ownedRunners } from './runner-set-context';
import type { RunnerRemoval } from './runner-removal';
import type { RunnerSetStatusWriter } from './runner-set-status';

export class RunnerSetFinalizer {
  constructor(
    private readonly ctx: RunnerSetContext,
    private readonly removal: RunnerRemoval,
    private readonly status: RunnerSetStatusWriter,
  ) {}

  /**
   * Deleting the set: every runner goes, registration first; runners with a job are waited for (they
   * leave by themselves when it ends). Then the proxy secret, then the finalizer.
   */
  async finalize(set: EphemeralRunnerSet, key: string, signal: AbortSignal, log: Logger): Promise<Result> {
    if (!hasFinalizer(set, EPHEMERAL_RUNNER_SET_FINALIZER)) return done;
    const runners = await ownedRunners(this.ctx, set);
    const states = runnersByState(runners);
    this.status.publishCounts(set, key, states);
    const { withJob } = await this.removal.releaseAndDeleteAll(set, key, states, signal, log);
    if (runners.length > 0) {
      // Only an empty list is proof: a runner deleted just now still releases its registration.
      log.info('Waiting for the runners of a deleted set to go', { runners: runners.length, withJob });
      return requeueAfter(this.ctx.opts.deletionPollMs);
    }
    const namespace = set.metadata?.namespace ?? '';
    await deleteIgnoringNotFound(
      this.ctx.deps.client,
      SecretKind,
      namespace,
      runnerProxySecretName(set.metadata?.name ?? '', namespace),
    );
    try {
      await this.ctx.deps.client.mergePatch(
        EphemeralRunnerSetKind,
        namespace,
        set.metadata?.name ?? '',
        finalizersPatch(set, withoutFinalizers(set, EPHEMERAL_RUNNER_SET_FINALIZER)),
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    this.ctx.deps.metrics?.forget(key);
    this.ctx.expectations.forget(key);
    this.ctx.failureBackoff.delete(key);
    log.info('Removed the finalizer of a deleted set');
    return done;
  }
}
