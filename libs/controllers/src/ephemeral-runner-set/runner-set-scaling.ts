import { EphemeralRunner, EphemeralRunnerKind, ScaleSetReasons, canaryReservedRunners } from '@aro/api';
import { Result, exponentialBackoffMs, done, requeueAfter, sooner } from '@aro/kube';
import { buildEphemeralRunner } from './runner-set-resources';
import type { RunnerSetContext, RunnerSetPass } from './runner-set-context';
import type { RunnerRemoval } from './runner-removal';
import { recordCanaryStartFailures } from './canary-start-failures';

/** Scaling by the listener's patch protocol (the reconciler's doc says how). */
export class RunnerSetScaling {
  constructor(
    private readonly ctx: Pick<
      RunnerSetContext,
      'client' | 'events' | 'expectations' | 'failureBackoff' | 'endings' | 'now' | 'opts'
    >,
    private readonly removal: RunnerRemoval,
  ) {}

  /**
   * One pass of scaling by the listener's patch: finished runners removed, Failed ones replaced with
   * backoff, what a new patch asks for created, surplus idle runners trimmed on patch 0.
   */
  async scale(pass: RunnerSetPass): Promise<Result> {
    const { obj: set, key, states, log } = pass;
    let result: Result = done;
    await this.removal.deleteFinished(pass);
    if (states.failed.length > 0) result = await this.replaceFailed(pass);
    const backoffEntry = this.ctx.failureBackoff.get(key);
    if (backoffEntry && states.running.some((r) => r.status?.ready)) {
      // A runner came up: the template works, so failures no longer slow replacements down.
      backoffEntry.failuresInARow = 0;
      backoffEntry.notBefore = 0;
    }

    const total = states.pending.length + states.running.length;
    // While a canary set tries a template change, its runners are part of the listener's count: this
    // set makes the rest, so the two together never exceed maxRunners (canary-rollout.ts).
    const replicas = Math.max(0, (set.spec.replicas ?? 0) - canaryReservedRunners(set.metadata?.annotations));
    const patchId = set.spec.patchID ?? 0;
    // Upstream's rule: a patch is new until a runner carries its ID, so a patch whose count was met by
    // runners that then end (their jobs completed before the listener computed it) still makes the
    // runners it asks for once they are gone. What keeps a runner whose job the patch did count from
    // being replaced is the held slot below, not a memory of patches acted on: such a memory left a
    // job the listener had just counted without a runner until its next idle poll (~50 s).
    const newPatch = patchId === 0 || patchId !== states.latestPatchId;
    const backoff = this.ctx.failureBackoff.get(key);
    let toCreate = 0;
    if (newPatch) {
      // Runners that ended after a job since the patch arrived, whose jobs it may have counted (see
      // RunnerEndings): their slots are held for a few seconds, and the pass looks again when they lapse.
      const live = new Set([...states.pending, ...states.running].map((r) => r.metadata?.name ?? ''));
      const { held, releaseInMs } = this.ctx.endings.heldFor(key, patchId, live);
      if (held > 0 && replicas > total) {
        log.debug('Runners that ended since the patch arrived still hold their slots', {
          held,
          patchId,
          releaseInMs,
        });
        result = sooner(result, requeueAfter(releaseInMs));
      }
      toCreate = replicas - total - held;
      if (backoff) backoff.owed = 0;
    } else if (backoff && backoff.owed > 0) {
      toCreate = Math.min(backoff.owed, replicas - total);
    }
    if (toCreate > 0 && backoff && this.ctx.now() < backoff.notBefore) {
      log.info('Holding back new runners after Failed ones', {
        failuresInARow: backoff.failuresInARow,
        waitMs: backoff.notBefore - this.ctx.now(),
      });
      result = sooner(result, requeueAfter(backoff.notBefore - this.ctx.now()));
      toCreate = 0;
    }
    if (toCreate > 0) {
      await this.createRunners(pass, toCreate);
      if (backoff) backoff.owed = Math.max(0, backoff.owed - toCreate);
    } else if (newPatch && patchId === 0 && total > replicas) {
      await this.removal.deleteIdleRunners(pass, total - replicas);
    }

    return result;
  }

  /**
   * A Failed runner will not start (its pod was refused, or it was marked Failed for another reason
   * the ER controller gives up on). It is deleted, not counted, and replaced, so it never holds a slot
   * of `replicas` (upstream #3014, #4258); the replacement waits out an exponential backoff so that a
   * template that is simply invalid does not turn into a create/fail loop.
   */
  private async replaceFailed(pass: RunnerSetPass): Promise<Result> {
    const { obj: set, key } = pass;
    const backoff = this.ctx.failureBackoff.get(key) ?? { failuresInARow: 0, notBefore: 0, owed: 0 };
    for (const runner of pass.states.failed) {
      await this.removal.deleteRunner(pass, runner, 'failed');
      backoff.failuresInARow += 1;
      backoff.owed += 1;
      this.ctx.events?.record(
        set,
        'Warning',
        ScaleSetReasons.runnerFailed,
        `Runner ${runner.metadata?.name} failed (${runner.status?.reason ?? 'no reason'}: ${runner.status?.message ?? ''}); it is deleted and replaced`,
      );
    }
    await recordCanaryStartFailures(this.ctx.client, set, pass.states.failed);
    const waitMs = exponentialBackoffMs(
      backoff.failuresInARow,
      this.ctx.opts.failedRunnerBackoffBaseMs,
      this.ctx.opts.failedRunnerBackoffMaxMs,
    );
    backoff.notBefore = this.ctx.now() + waitMs;
    this.ctx.failureBackoff.set(key, backoff);
    return requeueAfter(waitMs);
  }

  private async createRunners({ obj: set, key, log }: RunnerSetPass, count: number): Promise<void> {
    log.info('Creating runners', { count, replicas: set.spec.replicas ?? 0, patchID: set.spec.patchID ?? 0 });
    for (let i = 0; i < count; i++) {
      const created = await this.ctx.client.create<EphemeralRunner>(
        EphemeralRunnerKind,
        buildEphemeralRunner(set, this.ctx.opts.excludeLabelPropagationPrefixes),
      );
      this.ctx.expectations.expectCreation(key, created.metadata?.name ?? '');
    }
  }
}
