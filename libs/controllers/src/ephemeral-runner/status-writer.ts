import { EphemeralRunner, EphemeralRunnerKind, EphemeralRunnerPhase, EphemeralRunnerStatus } from '@aro/api';
import { LazyCopy, OwnWrites } from '@aro/kube';
import type { Logger } from '@aro/observability';
import type { EventType } from '../events/event-recorder';
import { type RunnerContext, runnerKey } from './reconciler-context';
import { describeError } from '../shared/describe-error';

/**
 * Every write to an EphemeralRunner, and what follows from it: the phase metrics, the Events, the
 * lifecycle observers, and the record of this controller's own writes (so a reconcile never acts on
 * a cached copy older than what it wrote).
 */
export class RunnerStatusWriter {
  private readonly ownWrites: OwnWrites;

  constructor(private readonly ctx: RunnerContext) {
    this.ownWrites = new OwnWrites(10_000, ctx.now, ctx.memory.slot('own writes'));
  }

  /** How long the cached runner (at `resourceVersion`) may still be behind this controller's last write. */
  behindMs(key: string, resourceVersion: string | undefined): number {
    return this.ownWrites.behindMs(key, resourceVersion);
  }

  /**
   * The patch that lets the API server delete the object answers with the version it read, not a new
   * one; the copy just finalized is nonetheless gone, and must not be finalized again.
   */
  recordGone(runner: EphemeralRunner): void {
    this.ownWrites.record(runnerKey(runner), runner.metadata?.resourceVersion, '');
  }

  /** An Event on the runner, unless Events are off. */
  event(runner: EphemeralRunner, type: EventType, reason: string, message: string): void {
    this.ctx.deps.events?.record(runner, type, reason, message);
  }

  async patch(runner: EphemeralRunner, patch: object | undefined): Promise<EphemeralRunner> {
    if (!patch) return runner;
    const updated = await this.ctx.deps.client.mergePatch<EphemeralRunner>(
      EphemeralRunnerKind,
      runner.metadata?.namespace ?? '',
      runner.metadata?.name ?? '',
      patch,
    );
    this.recordWrite(runner, updated);
    return updated;
  }

  private recordWrite(before: EphemeralRunner, after: EphemeralRunner): void {
    this.ownWrites.record(
      `${before.metadata?.namespace}/${before.metadata?.name}`,
      before.metadata?.resourceVersion,
      after.metadata?.resourceVersion,
    );
  }

  /** Writes the changed status fields through the status subresource, then tells metrics and observers. */
  async patchStatus(
    runner: EphemeralRunner,
    change: EphemeralRunnerStatus,
    log: Logger,
  ): Promise<EphemeralRunner> {
    const copy = new LazyCopy(runner);
    const target = copy.mutate();
    target.status = { ...(target.status ?? {}), ...change };
    for (const key of Object.keys(change) as (keyof EphemeralRunnerStatus)[]) {
      if (change[key] === undefined) delete target.status[key];
    }
    const patch = copy.mergePatch();
    if (!patch) return runner;
    let updated: EphemeralRunner;
    try {
      updated = await this.ctx.deps.client.mergePatchStatus<EphemeralRunner>(
        EphemeralRunnerKind,
        runner.metadata?.namespace ?? '',
        runner.metadata?.name ?? '',
        patch,
      );
    } catch (err) {
      throw new Error(`failed to update the runner status: ${describeError(err)}`, { cause: err });
    }
    this.recordWrite(runner, updated);
    const from = runner.status?.phase;
    const to = updated.status?.phase;
    if (from !== to) {
      this.publishPhase(updated, to);
      log.info('Runner phase changed', { from: from ?? '', to });
      if (
        to === EphemeralRunnerPhase.Pending ||
        to === EphemeralRunnerPhase.Running ||
        to === EphemeralRunnerPhase.Succeeded
      ) {
        this.event(updated, 'Normal', `Runner${to}`, this.transitionMessage(updated, to));
      }
      for (const observer of this.ctx.deps.observers ?? []) {
        try {
          observer.onPhaseChange?.(updated, from, to);
        } catch (err) {
          log.warn('A runner lifecycle observer failed', { err: describeError(err) });
        }
      }
    }
    return updated;
  }

  private transitionMessage(runner: EphemeralRunner, phase: EphemeralRunnerPhase | undefined): string {
    switch (phase) {
      case EphemeralRunnerPhase.Pending:
        return `Runner ${runner.status?.runnerName ?? ''} (id ${runner.status?.runnerId ?? 0}) is registered and waiting for a job`;
      case EphemeralRunnerPhase.Running:
        return `Runner is executing job ${runner.status?.jobId ?? ''}`;
      default:
        return 'Runner finished its job and deregistered itself';
    }
  }

  publishPhase(runner: EphemeralRunner, phase: EphemeralRunnerPhase | '' | undefined): void {
    this.ctx.deps.phaseMetrics?.publish(runner, phase);
  }
}
