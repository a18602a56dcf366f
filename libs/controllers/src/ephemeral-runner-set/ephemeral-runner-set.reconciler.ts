import {
  Annotations,
  DEFAULT_UPSTREAM_COMPATIBILITY,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
  EphemeralRunnerSetPhase,
  type UpstreamCompatibility,
  ephemeralRunnerSetFinalizerNames,
} from '@aro/api';
import { FinalizingReconciler, type Pass, type Released, Result, requeueAfter, sooner } from '@aro/kube';
import { runnersByState } from './runner-states';
import {
  type EphemeralRunnerSetReconcilerDeps,
  type EphemeralRunnerSetReconcilerOptions as RunnerSetContextOptions,
  type RunnerSetContext,
  type RunnerSetPass,
  ownedRunners,
  runnerSetContext,
} from './runner-set-context';
import { RunnerProxySecret } from './runner-proxy-secret';
import { RunnerRemoval } from './runner-removal';
import { RunnerSetFinalizer } from './runner-set-finalizer';
import { RunnerSetScaling } from './runner-set-scaling';
import { RunnerSetStatusWriter } from './runner-set-status';
import { RunnerSetTransitions } from './runner-set-transitions';
import { adoptUpstreamRunnerSet, isUnadoptedUpstreamSet, storedSpecHash } from './upstream-adoption';
import { RunnerFailureCondition } from './runner-failure-condition';

export type { EphemeralRunnerSetReconcilerDeps } from './runner-set-context';

export interface EphemeralRunnerSetReconcilerOptions extends RunnerSetContextOptions {
  /**
   * The upstream version whose EphemeralRunnerSet finalizer the sets carry (docs/migrating.md): the
   * one name that version's controller removes, so it can delete ARO's sets after a rollback.
   */
  upstreamCompatibility?: UpstreamCompatibility;
}

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
export class EphemeralRunnerSetReconciler extends FinalizingReconciler<EphemeralRunnerSet, RunnerSetContext> {
  private readonly removal = new RunnerRemoval(this.ctx);
  private readonly status = new RunnerSetStatusWriter(this.ctx);
  private readonly proxySecret = new RunnerProxySecret(this.ctx);
  private readonly scaling = new RunnerSetScaling(this.ctx, this.removal);
  private readonly transitions = new RunnerSetTransitions(
    this.ctx,
    this.removal,
    this.proxySecret,
    this.status,
  );
  private readonly finalizer = new RunnerSetFinalizer(this.ctx, this.removal, this.status);
  private readonly failureCondition = new RunnerFailureCondition(this.ctx.memory.slot('runner failures'));

  constructor(deps: EphemeralRunnerSetReconcilerDeps, options: EphemeralRunnerSetReconcilerOptions = {}) {
    super(runnerSetContext(deps, options), {
      kind: EphemeralRunnerSetKind,
      // Every version's name is known: a set another version finalized is cleaned up and released
      // with all its names; a live one gets this version's name in place of the others.
      finalizer: ephemeralRunnerSetFinalizerNames(
        options.upstreamCompatibility ?? DEFAULT_UPSTREAM_COMPATIBILITY,
      ),
    });
  }

  /** What the watch events must tell it: the patch each set stands under and the runners ending under it. */
  get watchPredicates() {
    return { set: this.ctx.endings.setEvents, runner: this.ctx.endings.runnerEvents };
  }

  /** Deleting the set: see {@link RunnerSetFinalizer}. */
  protected cleanup(deleting: Pass<EphemeralRunnerSet>): Promise<Result | Released> {
    return this.finalizer.finalize(deleting);
  }

  /** A live set carrying the finalizer: its runners at the count asked for, its spec rolled out. */
  protected async apply(live: Pass<EphemeralRunnerSet>): Promise<Result> {
    const { key, log } = live;
    const behindMs = this.status.behindMs(key, live.obj.metadata?.resourceVersion);
    if (behindMs > 0) {
      // The cached set predates our last status write (its phase may be stale): its event is coming.
      log.debug('Waiting for the cache to show the status written last pass');
      return requeueAfter(Math.min(behindMs, 1_000));
    }
    const runners = await ownedRunners(this.ctx.cache, live.obj);
    const waitMs = this.ctx.expectations.pendingMs(key, runners);
    if (waitMs > 0) {
      // Our last pass's creations or deletions are not in the cache yet: counting now would double them.
      log.debug('Waiting for the cache to show the runners created or deleted last pass');
      return requeueAfter(Math.min(waitMs, 1_000));
    }
    let pass: RunnerSetPass = { ...live, states: runnersByState(runners) };
    this.status.publishCounts(pass);

    const hash = storedSpecHash(pass.obj);
    if (isUnadoptedUpstreamSet(pass.obj, runners.length)) {
      pass = { ...pass, obj: await adoptUpstreamRunnerSet(this.ctx.client, pass, hash) };
    }
    if (pass.obj.metadata?.annotations?.[Annotations.integrityHash] !== hash) {
      return this.transitions.rollOutSpec(pass, hash);
    }

    await this.proxySecret.reconcile(pass, { specChanged: false });

    const outdated =
      pass.states.outdated.length > 0 || pass.obj.status?.phase === EphemeralRunnerSetPhase.Outdated;
    if (outdated) return this.transitions.rest(pass);

    const runnersHealthy = this.failureCondition.observe(pass);
    const result = await this.scaling.scale(pass);
    const statusDue = await this.status.updateStatus(
      pass,
      EphemeralRunnerSetPhase.Running,
      undefined,
      runnersHealthy,
      true,
    );
    return sooner(result, statusDue);
  }
}
