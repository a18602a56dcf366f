import { EphemeralRunner, EphemeralRunnerKind, hasJob } from '@aro/api';
import { isActionsNotFound, isJobStillRunning } from '@aro/actions';
import { isNotFound } from '@aro/kube';
import { configHolderOfRunnerSet } from '@aro/secrets';
import { idleRunnerCandidates } from './runner-states';
import type { RunnerSetContext, RunnerSetPass } from './runner-set-context';
import { describeError } from '../shared/describe-error';

/**
 * How runners leave a set: a registration is removed before its runner is deleted, so a runner the
 * service could still give a job to is never deleted, and one the service says is busy stays.
 */
export class RunnerRemoval {
  constructor(
    private readonly ctx: Pick<RunnerSetContext, 'client' | 'resolver' | 'expectations' | 'opts'>,
  ) {}

  /** Finished runners are removed at once: they hold nothing, and upstream's wait for the next patch only delays their cleanup. */
  async deleteFinished(pass: RunnerSetPass): Promise<void> {
    for (const runner of pass.states.succeeded) await this.deleteRunner(pass, runner, 'finished');
  }

  /**
   * Removes up to `count` idle runners, registration first: once the service has dropped a runner it
   * can no longer be given a job, so the delete that follows cannot kill one. A runner the service
   * says is executing a job stays (the listener's job-started patch may simply not have arrived).
   */
  async deleteIdleRunners(pass: RunnerSetPass, count: number): Promise<void> {
    const { key, log } = pass;
    let deleted = 0;
    const failures: string[] = [];
    for (const runner of idleRunnerCandidates(pass.states)) {
      if (deleted >= count) break;
      const released = await this.releaseRegistration(pass, runner);
      if (released === 'busy') continue;
      if (released === 'error') {
        failures.push(runner.metadata?.name ?? '');
        continue;
      }
      await this.deleteRunner(pass, runner, 'scale-down');
      deleted++;
    }
    log.info('Scaled down idle runners', { wanted: count, deleted });
    if (failures.length > 0) {
      throw new Error(
        `EphemeralRunnerSet ${key}: could not remove the registrations of runners ${failures.join(', ')}`,
      );
    }
  }

  /**
   * Every runner without a job goes (deletion, spec change, outdated): done ones at once, idle ones
   * after their registration. Unregistered runners are deleted directly: their own finalizer removes
   * whatever registration they get. Runners with a job are left to finish it.
   */
  async releaseAndDeleteAll(pass: RunnerSetPass): Promise<{ withJob: number; releasedIdle: number }> {
    const { states } = pass;
    let remaining = 0;
    let releasedIdle = 0;
    for (const runner of [...states.succeeded, ...states.failed, ...states.outdated]) {
      await this.deleteRunner(pass, runner, 'done');
    }
    for (const runner of [...states.pending, ...states.running]) {
      if (hasJob(runner)) {
        remaining++;
        continue;
      }
      if ((runner.status?.runnerId ?? 0) !== 0) {
        const released = await this.releaseRegistration(pass, runner);
        if (released !== 'released') {
          remaining++;
          continue;
        }
      }
      await this.deleteRunner(pass, runner, 'cleanup');
      releasedIdle++;
    }
    return { withJob: remaining, releasedIdle };
  }

  private async releaseRegistration(
    { obj: set, signal, log }: RunnerSetPass,
    runner: EphemeralRunner,
  ): Promise<'released' | 'busy' | 'error'> {
    const runnerId = runner.status?.runnerId ?? 0;
    try {
      const client = await this.ctx.resolver.getActionsClient(configHolderOfRunnerSet(set), signal);
      await client.removeRunner(runnerId, {
        signal: AbortSignal.any([signal, AbortSignal.timeout(this.ctx.opts.actionsCallTimeoutMs)]),
      });
      return 'released';
    } catch (err) {
      if (isJobStillRunning(err)) {
        log.info('Keeping a runner the service says is executing a job', {
          runner: runner.metadata?.name,
          runnerId,
        });
        return 'busy';
      }
      if (isActionsNotFound(err)) return 'released';
      log.warn('Could not remove a runner registration', {
        runner: runner.metadata?.name,
        runnerId,
        err: describeError(err),
      });
      return 'error';
    }
  }

  async deleteRunner(
    { obj: set, key, log }: Pick<RunnerSetPass, 'obj' | 'key' | 'log'>,
    runner: EphemeralRunner,
    why: string,
  ): Promise<void> {
    const name = runner.metadata?.name ?? '';
    try {
      await this.ctx.client.delete(EphemeralRunnerKind, set.metadata?.namespace ?? '', name, {
        preconditions: { uid: runner.metadata?.uid },
      });
      this.ctx.expectations.expectDeletion(key, name);
      log.debug('Deleted a runner', { runner: name, why, phase: runner.status?.phase });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}
