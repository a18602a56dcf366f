import {
  Annotations,
  EPHEMERAL_RUNNER_SET_FINALIZER,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
  EphemeralRunnerSetPhase,
  integrityHash,
} from '@aro/api';
import {
  ReconcileContext,
  Reconciler,
  Request,
  Result,
  patchingFinalizers,
  requeueAfter,
  reconcileFinalized,
  requestKey,
} from '@aro/kube';
import type { Logger } from '@aro/observability';
import { runnersByState } from './runner-states';
import {
  type EphemeralRunnerSetReconcilerDeps,
  type EphemeralRunnerSetReconcilerOptions,
  type RunnerSetContext,
  ownedRunners,
  runnerSetContext,
} from './runner-set-context';
import { RunnerProxySecret } from './runner-proxy-secret';
import { RunnerRemoval } from './runner-removal';
import { RunnerSetFinalizer } from './runner-set-finalizer';
import { RunnerSetScaling } from './runner-set-scaling';
import { RunnerSetStatusWriter } from './runner-set-status';
import { RunnerSetTransitions } from './runner-set-transitions';
import { adoptUpstreamRunnerSet, isUpstreamIntegrityHash } from './upstream-adoption';
import { RunnerFailureCondition } from './runner-failure-condition';

export type {
  EphemeralRunnerSetReconcilerDeps,
  EphemeralRunnerSetReconcilerOptions,
} from './runner-set-context';

/**
 * The EphemeralRunnerSet reconciler: keeps `spec.replicas` runners, as the listener asks, without
 * ever taking a runner that has or may have a job.
 *
 * Scaling follows upstream's patch protocol. The listener patches `{replicas, patchID}`; each runner
 * records the patchID it was created for. A patch not yet acted on (its ID is above every runner's)
 * creates what is missing; once acted on, the same patch is not acted on again, so a runner that ends
 * after its job is not replaced until the listener says more are needed. `patchID` 0 is the listener
 * saying "nothing happened, converge": it creates what is missing and also removes surplus idle runners.
 * A positive patch never scales down: the listener counts busy runners, and a runner leaves by itself
 * after its job.
 *
 * Better than upstream: a Failed runner is deleted at once and replaced (with backoff), instead of
 * holding a slot of `replicas` until a human deletes it; a finished one is removed at once; an Outdated
 * runner stops the set from creating more (phase and condition say why), and nothing loops.
 *
 * The set's spec is the listener's: this controller never patches it, only its status, finalizer and
 * integrity-hash annotation.
 */
export class EphemeralRunnerSetReconciler implements Reconciler {
  private readonly ctx: RunnerSetContext;
  private readonly status: RunnerSetStatusWriter;
  private readonly proxySecret: RunnerProxySecret;
  private readonly scaling: RunnerSetScaling;
  private readonly transitions: RunnerSetTransitions;
  private readonly finalizer: RunnerSetFinalizer;
  private readonly failureCondition = new RunnerFailureCondition();

  constructor(deps: EphemeralRunnerSetReconcilerDeps, options: EphemeralRunnerSetReconcilerOptions = {}) {
    this.ctx = runnerSetContext(deps, options);
    const removal = new RunnerRemoval(this.ctx);
    this.status = new RunnerSetStatusWriter(this.ctx);
    this.proxySecret = new RunnerProxySecret(this.ctx);
    this.scaling = new RunnerSetScaling(this.ctx, removal);
    this.transitions = new RunnerSetTransitions(this.ctx, removal, this.proxySecret, this.status);
    this.finalizer = new RunnerSetFinalizer(this.ctx, removal, this.status);
  }

  reconcile(req: Request, { signal, log }: ReconcileContext): Promise<Result> {
    const key = requestKey(req);
    return reconcileFinalized<EphemeralRunnerSet>(req, {
      reader: this.ctx.deps.cache,
      kind: EphemeralRunnerSetKind,
      finalizer: { name: EPHEMERAL_RUNNER_SET_FINALIZER },
      write: patchingFinalizers(this.ctx.deps.client, EphemeralRunnerSetKind),
      forget: (gone) => this.forget(gone),
      apply: (live) => this.apply(live, key, signal, log),
      cleanup: (deleting) => this.finalizer.finalize(deleting, key, signal, log),
    });
  }

  /** Everything this controller remembers of a set, dropped once the set is gone. */
  private forget(key: string): void {
    this.ctx.deps.metrics?.forget(key);
    this.ctx.expectations.forget(key);
    this.ctx.failureBackoff.delete(key);
    this.ctx.actedPatchIds.delete(key);
    this.failureCondition.forget(key);
    this.status.forget(key);
  }

  /** A live set carrying the finalizer: its runners at the count asked for, its spec rolled out. */
  private async apply(
    set: EphemeralRunnerSet,
    key: string,
    signal: AbortSignal,
    log: Logger,
  ): Promise<Result> {
    const behindMs = this.status.behindMs(key, set.metadata?.resourceVersion);
    if (behindMs > 0) {
      // The cached set predates our last status write (its phase may be stale): its event is coming.
      log.debug('Waiting for the cache to show the status written last pass');
      return requeueAfter(Math.min(behindMs, 1_000));
    }
    const runners = await ownedRunners(this.ctx, set);
    const waitMs = this.ctx.expectations.pendingMs(key, runners);
    if (waitMs > 0) {
      // Our last pass's creations or deletions are not in the cache yet: counting now would double them.
      log.debug('Waiting for the cache to show the runners created or deleted last pass');
      return requeueAfter(Math.min(waitMs, 1_000));
    }
    const states = runnersByState(runners);
    this.status.publishCounts(set, key, states);

    const hash = integrityHash(set.spec.ephemeralRunnerSpec);
    if (isUpstreamIntegrityHash(set.metadata?.annotations?.[Annotations.integrityHash])) {
      set = await adoptUpstreamRunnerSet(this.ctx, set, hash, log);
    }
    if (set.metadata?.annotations?.[Annotations.integrityHash] !== hash) {
      return this.transitions.rollOutSpec(set, key, states, hash, signal, log);
    }

    await this.proxySecret.reconcile(set, signal, log, { specChanged: false });

    const outdated = states.outdated.length > 0 || set.status?.phase === EphemeralRunnerSetPhase.Outdated;
    if (outdated) return this.transitions.rest(set, key, states, signal, log);

    const runnersHealthy = this.failureCondition.observe(set, key, states);
    const result = await this.scaling.scale(set, key, states, signal, log);
    await this.status.updateStatus(
      set,
      states,
      EphemeralRunnerSetPhase.Running,
      log,
      undefined,
      runnersHealthy,
    );
    return result;
  }
}
