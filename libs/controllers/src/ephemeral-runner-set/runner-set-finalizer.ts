import { EphemeralRunnerSet, legacyRunnerProxySecretName, runnerProxySecretName } from '@aro/api';
import {
  type Pass,
  type Released,
  Result,
  SecretKind,
  deleteIgnoringNotFound,
  released,
  requeueAfter,
} from '@aro/kube';
import { runnersByState } from './runner-states';
import { type RunnerSetContext, ownedRunners } from './runner-set-context';
import type { RunnerRemoval } from './runner-removal';
import type { RunnerSetStatusWriter } from './runner-set-status';

export class RunnerSetFinalizer {
  constructor(
    private readonly ctx: Pick<RunnerSetContext, 'client' | 'cache' | 'opts'>,
    private readonly removal: RunnerRemoval,
    private readonly status: RunnerSetStatusWriter,
  ) {}

  /**
   * Deleting the set: every runner goes, registration first; runners with a job are waited for (they
   * leave by themselves when it ends). Then the proxy secret (under either name); then the finalizer may go.
   */
  async finalize(deleting: Pass<EphemeralRunnerSet>): Promise<Result | Released> {
    const { obj: set, log } = deleting;
    const runners = await ownedRunners(this.ctx.cache, set);
    const pass = { ...deleting, states: runnersByState(runners) };
    this.status.publishCounts(pass);
    const { withJob } = await this.removal.releaseAndDeleteAll(pass);
    if (runners.length > 0) {
      // Only an empty list is proof: a runner deleted just now still releases its registration.
      log.info('Waiting for the runners of a deleted set to go', { runners: runners.length, withJob });
      return requeueAfter(this.ctx.opts.deletionPollMs);
    }
    const namespace = set.metadata?.namespace ?? '';
    const setName = set.metadata?.name ?? '';
    // Both names: a set whose runners still used the earlier ARO name keeps that Secret until now.
    for (const secret of [
      runnerProxySecretName(setName, namespace),
      legacyRunnerProxySecretName(setName, namespace),
    ]) {
      await deleteIgnoringNotFound(this.ctx.client, SecretKind, namespace, secret);
    }
    log.info('Every runner of the deleted set is gone; removing its finalizer');
    return released();
  }
}
