import { Annotations, CanaryAnnotations, EphemeralRunnerSetKind, type ResourceKind } from '@aro/api/lean';
import type { KubeObject } from '@aro/kube/lean';
import type { Logger } from '@aro/observability/lean';

/** The writes the listener makes; its Role allows merge patches and nothing else (no get/list/watch). */
export interface PatchClient {
  mergePatch<T extends KubeObject>(
    kind: ResourceKind,
    namespace: string,
    name: string,
    patch: object,
  ): Promise<T>;
  mergePatchStatus<T extends KubeObject>(
    kind: ResourceKind,
    namespace: string,
    name: string,
    patch: object,
  ): Promise<T>;
}

export interface ScalerOptions {
  namespace: string;
  name: string;
  minRunners: number;
  maxRunners: number;
  logger: Logger;
  /** Called with each desired count once it is written (the gha_desired_runners gauge). */
  onDesired?: (count: number) => void;
  /** Canary job results, carried on each patch once a canary job was seen (canary-tally.ts). */
  canaryResults?: () => string | undefined;
}

/** The EphemeralRunnerSet spec fields the listener owns. */
export interface ScalePatch {
  replicas: number;
  patchID: number;
}

const MAX_INT32 = 2 ** 31 - 1;
/** Runner names one patch carries; about 4 KiB of annotation at most. */
const MAX_NAMED_RUNNERS = 100;

/**
 * Turns the service's count of assigned jobs into the EphemeralRunnerSet's `spec.replicas` and
 * `spec.patchID`, upstream's protocol with the EphemeralRunnerSet controller:
 *
 * - replicas = min(maxRunners, assigned + minRunners + headroom): minRunners is idle headroom on top of
 *   the jobs; `headroom` is the warm headroom (0 unless the set opts in, see headroom.ts).
 * - patchID increases with every patch (wrapping to 1 after MaxInt32), so the controller can tell a new
 *   decision from one it already acted on (it records the patchID on the runners it creates). A
 *   patchID > 0 only ever scales up: runners leave by finishing their job, never by being trimmed.
 * - patchID 0 says "converge": sent when nothing happened since the last patch (no job started or
 *   completed), the target did not change and it is the idle floor, min(maxRunners, minRunners +
 *   headroom). The controller then deletes surplus idle runners, which is how the set gets back to
 *   minRunners once the work is done. The floor includes the headroom so that a converge never trims
 *   the warm runners the same patch asks for; a headroom that shrinks is first written with a patchID
 *   above 0 (the target changed), then converged to on the next idle decision.
 */
export class Scaler {
  private patchSeq = -1;
  private target = -1;
  private dirty = false;
  private pending: ScalePatch | undefined;
  /** The scale set ID last reported missing on the EphemeralRunnerSet. */
  private reportedMissing: number | undefined;
  /**
   * Runners whose JobCompleted was read since the last successful write: named on the next patch, so
   * the controller knows their jobs are out of its count and replaces them at once when they end,
   * instead of holding their slots for a job it cannot tell apart from one the count still holds.
   */
  private readonly completedRunners = new Set<string>();
  /** The warm headroom of the last decision, for its log line. */
  private lastHeadroom = 0;

  constructor(
    private readonly client: PatchClient,
    private readonly o: ScalerOptions,
  ) {}

  /**
   * Tells the controller, on the EphemeralRunnerSet, that the service has no scale set `scaleSetId`
   * (it answered 404 to the session create), so it creates it again now rather than at its periodic
   * check. Once per ID: repeats add nothing.
   */
  async reportScaleSetMissing(scaleSetId: number): Promise<void> {
    if (this.reportedMissing === scaleSetId) return;
    const { namespace, name } = this.o;
    await this.client.mergePatch(EphemeralRunnerSetKind, namespace, name, {
      metadata: { annotations: { [Annotations.scaleSetMissing]: String(scaleSetId) } },
    });
    this.reportedMissing = scaleSetId;
    this.o.logger.warn('The Actions service has no scale set of this ID; told the controller', {
      scaleSetId,
    });
  }

  /**
   * Shared mode: tells the controller, on the EphemeralRunnerSet, whether this process holds the scale
   * set's session (`open <owner>`) or deleted it (`closed <owner>`); the AutoscalingListener's status
   * shows it, as a pod's state shows a per-pod listener's.
   */
  async reportSession(state: 'open' | 'closed', owner: string): Promise<void> {
    const { namespace, name } = this.o;
    await this.client.mergePatch(EphemeralRunnerSetKind, namespace, name, {
      metadata: { annotations: { [Annotations.listenerSession]: `${state} ${owner}` } },
    });
  }

  /**
   * A job started or completed since the last decision: the next one must not force convergence. A
   * completed job's runner is named with the next patch written (see {@link Annotations.completedRunners}).
   */
  markJobEvent(completedRunner?: string): void {
    this.dirty = true;
    if (completedRunner) this.completedRunners.add(completedRunner);
  }

  /**
   * The next patch for `assignedJobs` and `headroom` idle runners above minRunners; advances the
   * sequence (pure apart from that, for the tests). Headroom 0 gives upstream's numbers exactly.
   */
  decide(assignedJobs: number, headroom = 0): ScalePatch {
    const dirty = this.dirty;
    this.dirty = false;
    if (this.patchSeq === MAX_INT32) this.patchSeq = 0;
    this.patchSeq++;
    const floor = Math.min(this.o.minRunners + Math.max(0, headroom), this.o.maxRunners);
    const target = Math.min(floor + Math.max(0, assignedJobs), this.o.maxRunners);
    const previous = this.target;
    this.target = target;
    const converge = !dirty && target === previous && target === floor;
    return { replicas: target, patchID: converge ? 0 : this.patchSeq };
  }

  /**
   * Decides and writes. A failed write stays pending and is sent again by `flushPending` (the loop
   * calls it before its next poll), unless a newer decision replaces it first.
   */
  async setDesired(assignedJobs: number, headroom = 0): Promise<ScalePatch> {
    const patch = this.decide(assignedJobs, headroom);
    this.pending = patch;
    this.lastHeadroom = headroom;
    await this.write(patch, assignedJobs);
    return patch;
  }

  /** Writes the last decision if its write failed; a no-op otherwise. */
  async flushPending(): Promise<void> {
    if (this.pending) await this.write(this.pending, undefined);
  }

  get hasPending(): boolean {
    return this.pending !== undefined;
  }

  private async write(patch: ScalePatch, assignedJobs: number | undefined): Promise<void> {
    const { namespace, name } = this.o;
    // The names ride on the patch that has their jobs out of its count (no write of their own); at most
    // MAX_NAMED_RUNNERS a patch keeps the annotation small, and the rest go with the next one (until
    // then the controller holds their slots for a few seconds at most). null clears an earlier list,
    // so the annotation never names runners for a later count.
    const named = [...this.completedRunners].slice(0, MAX_NAMED_RUNNERS);
    const canary = this.o.canaryResults?.();
    // Both spec fields always, as upstream (its merge patch is computed against -1/-1), so the
    // controller never sees one without the other.
    await this.client.mergePatch(EphemeralRunnerSetKind, namespace, name, {
      metadata: {
        annotations: {
          [Annotations.completedRunners]: named.length > 0 ? named.join(',') : null,
          ...(canary === undefined ? {} : { [CanaryAnnotations.results]: canary }),
        },
      },
      spec: { replicas: patch.replicas, patchID: patch.patchID },
    });
    for (const runner of named) this.completedRunners.delete(runner);
    if (this.pending === patch) this.pending = undefined;
    this.o.onDesired?.(patch.replicas);
    this.o.logger.info('Scaled the EphemeralRunnerSet', {
      ephemeralRunnerSet: `${namespace}/${name}`,
      replicas: patch.replicas,
      patchID: patch.patchID,
      assignedJobs,
      minRunners: this.o.minRunners,
      maxRunners: this.o.maxRunners,
      ...(this.lastHeadroom > 0 ? { headroom: this.lastHeadroom } : {}),
    });
  }
}
