import {
  AUTOSCALING_RUNNER_SET_FINALIZER,
  Annotations,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  AutoscalingRunnerSetPhase,
  EphemeralRunnerSetPhase,
  ScaleSetConditionTypes,
  runnerSpecHash,
} from '@aro/api';
import type { ActionsServiceClient } from '@aro/actions';
import {
  type FinalizerWriter,
  FinalizingReconciler,
  type KubeApi,
  type Released,
  Result,
  done,
  finalizersPatch,
  requeueAfter,
  withoutFinalizers,
} from '@aro/kube';
import { configHolderOfScaleSet } from '@aro/secrets';
import { desiredRunnerSpec, runnerScaleSetHash } from './runner-scale-set-resources';
import {
  type AutoscalingRunnerSetReconcilerDeps,
  type AutoscalingRunnerSetReconcilerOptions,
  type ScaleSetContext,
  type ScaleSetPass,
  scaleSetContext,
} from './runner-scale-set-context';
import { ListenerSync } from './listener-sync';
import { RunnerSetSync } from './runner-set-sync';
import { ScaleSetFinalizer } from './scale-set-finalizer';
import { LegacyRunnerSets } from './legacy-runner-sets';
import { ScaleSetStatusWriter } from './scale-set-status';
import { ScaleSetSync } from './scale-set-sync';
import { CredentialChangeWatch } from './credential-change';
import { ForgottenProtection } from './forgotten-protection';
import { findCondition } from '../shared/conditions';
import { CanaryRollout } from './canary';

export type {
  AutoscalingRunnerSetReconcilerDeps,
  AutoscalingRunnerSetReconcilerOptions,
} from './runner-scale-set-context';

/**
 * The AutoscalingRunnerSet reconciler: one scale set on the Actions service, one EphemeralRunnerSet
 * of the same name and one AutoscalingListener in the controller's namespace.
 *
 * Every failure to reach the service (credentials, TLS, proxy, runner group) lands on the object as
 * the `ScaleSetReady` condition and a Warning Event naming the cause, retried with a backoff of its own
 * instead of a hot error loop. A scale set the service has deleted (it drops those offline for about a
 * day, upstream #3205, #3935) is created again, and the listener and runners follow the new ID.
 */
export class AutoscalingRunnerSetReconciler extends FinalizingReconciler<
  AutoscalingRunnerSet,
  ScaleSetContext
> {
  private readonly status = new ScaleSetStatusWriter(this.ctx);
  private readonly scaleSet = new ScaleSetSync(this.ctx, this.status);
  private readonly listener = new ListenerSync(this.ctx, this.status);
  private readonly runnerSet = new RunnerSetSync(this.ctx, this.listener, this.status);
  private readonly finalizer = new ScaleSetFinalizer(this.ctx, this.listener, this.status);
  private readonly legacyRunnerSets = new LegacyRunnerSets(this.ctx);
  private readonly credentialChange = new CredentialChangeWatch(this.ctx);
  private readonly forgottenProtection = new ForgottenProtection(this.ctx);
  private readonly canary = new CanaryRollout(this.ctx, this.status, this.ctx.canaryMetrics);

  constructor(deps: AutoscalingRunnerSetReconcilerDeps, options: AutoscalingRunnerSetReconcilerOptions) {
    const ctx = scaleSetContext(deps, options);
    super(ctx, {
      kind: AutoscalingRunnerSetKind,
      finalizer: { name: AUTOSCALING_RUNNER_SET_FINALIZER },
      write: removingFinalizerFromLatest(ctx.client),
    });
  }

  /** Each Actions call of a pass gets its own deadline, within the pass's signal. */
  private callSignal(pass: ScaleSetPass): () => AbortSignal {
    return () => AbortSignal.any([pass.signal, AbortSignal.timeout(this.ctx.opts.actionsCallTimeoutMs)]);
  }

  /** Deleting the set: see {@link ScaleSetFinalizer}. */
  protected cleanup(deleting: ScaleSetPass): Promise<Result | Released> {
    return this.finalizer.finalize(deleting, this.callSignal(deleting));
  }

  /** A live set carrying the finalizer: its scale set, its runner set, its listener. */
  protected async apply(pass: ScaleSetPass): Promise<Result> {
    const callSignal = this.callSignal(pass);
    const { key, signal, log } = pass;
    let ars = pass.obj;
    const { namespace: reqNamespace = '', name: reqName = '' } = ars.metadata ?? {};
    const hash = runnerScaleSetHash(ars);
    if (ars.metadata?.annotations?.[Annotations.integrityHash] !== hash) {
      ars = await this.ctx.client.mergePatch<AutoscalingRunnerSet>(
        AutoscalingRunnerSetKind,
        reqNamespace,
        reqName,
        {
          metadata: { annotations: { [Annotations.integrityHash]: hash } },
        },
      );
      await this.status.patchStatus(ars, { phase: AutoscalingRunnerSetPhase.Pending });
    }

    // 1. The scale set on the Actions service.
    const heldBack = await this.credentialChange.holdBack(ars, key, log);
    if (heldBack) return heldBack;
    let scaleSetId: number;
    try {
      // Resolved only when the service must be asked: resolving reads the credential Secret live,
      // and most passes (the runner set's status moving) need nothing from the service.
      let client: Promise<ActionsServiceClient> | undefined;
      const holder = configHolderOfScaleSet(ars);
      const actions = (): Promise<ActionsServiceClient> =>
        (client ??= this.ctx.resolver.getActionsClient(holder, callSignal()));
      const outcome = await this.scaleSet.reconcile(ars, key, actions, callSignal, log);
      ars = outcome.ars;
      scaleSetId = outcome.scaleSetId;
    } catch (err) {
      if (signal.aborted) throw err;
      return this.credentialChange.remember(ars, key, await this.status.recordFailure(ars, key, err, log));
    }
    this.credentialChange.clear(key);
    await this.status.markReady(ars, key, scaleSetId);
    await this.forgottenProtection.sweep(ars, key, log);

    // 2. The EphemeralRunnerSet.
    const runnerSet = await this.runnerSet.reconcile(ars, scaleSetId, log);
    if (runnerSet === 'created') return done;
    // Canary roll-outs (opt-in): may hold the spec change back and keep its canary set from retiring.
    const canary =
      runnerSet.status?.phase === EphemeralRunnerSetPhase.Outdated
        ? undefined
        : await this.canary.reconcile(ars, runnerSet, desiredRunnerSpec(ars, scaleSetId), log);
    const retiring = await this.legacyRunnerSets.retire(ars, runnerSet, log, canary?.keep);
    if (runnerSet.status?.phase === EphemeralRunnerSetPhase.Outdated) {
      // Stop scaling: the listener would only ask for runners that cannot run. No delete/recreate
      // loop (upstream #4600): the set stays as it is until the template changes.
      await this.listener.delete(ars, log);
      await this.status.updateStatus(ars, runnerSet, AutoscalingRunnerSetPhase.Outdated);
      return done;
    }
    const desiredSpec = desiredRunnerSpec(ars, scaleSetId);
    // By meaning, not by serialization: upstream's Go types write `metadata: {}` and `resources: {}`
    // that ARO's rendering leaves out. Compared as written, every set taken over from upstream would
    // read as changed, and its idle runners would be deregistered and replaced at once.
    if (
      !canary?.holdBack &&
      runnerSpecHash(desiredSpec) !== runnerSpecHash(runnerSet.spec.ephemeralRunnerSpec)
    ) {
      const busy =
        (runnerSet.status?.pendingEphemeralRunners ?? 0) + (runnerSet.status?.runningEphemeralRunners ?? 0);
      const sameScaleSet = runnerSet.spec.ephemeralRunnerSpec?.runnerScaleSetId === scaleSetId;
      if (this.ctx.opts.updateStrategy === 'eventual' && busy > 0 && sameScaleSet) {
        return this.runnerSet.drain(ars, runnerSet, busy, log);
      }
      await this.runnerSet.replaceRunnerSpec(runnerSet, desiredSpec, log);
      return requeueAfter(this.ctx.opts.drainPollMs);
    }

    // 3. The listener.
    if (!this.ctx.opts.listenerImage) return this.listener.refuse(ars, runnerSet, log);
    await this.listener.reconcile(ars, scaleSetId, runnerSet.metadata?.name ?? '', log);
    if (
      findCondition(ars.status?.conditions, ScaleSetConditionTypes.listenerConfigured)?.status === 'False'
    ) {
      // Configured since (the controller restarted with an image): say so instead of a stale refusal.
      await this.status.setCondition(ars, {
        type: ScaleSetConditionTypes.listenerConfigured,
        status: 'True',
        reason: 'ListenerImageConfigured',
        message: 'The controller has a listener image',
      });
    }
    await this.status.updateStatus(ars, runnerSet, AutoscalingRunnerSetPhase.Running);
    // A retired set's last runner leaving may not change the set itself: look again soon.
    if (retiring) return requeueAfter(this.ctx.opts.drainPollMs);
    const sinceCheck = this.ctx.now() - (this.ctx.lastChecked.get(key) ?? 0);
    return requeueAfter(Math.max(1, this.ctx.opts.scaleSetCheckIntervalMs - sinceCheck));
  }
}

/**
 * The finalizer's removal is patched from the set as it is now, not as the pass read it: the
 * cleanup wrote to the set (its scale set annotations), so the version read would be refused.
 */
function removingFinalizerFromLatest(
  client: Pick<KubeApi, 'get' | 'mergePatch'>,
): FinalizerWriter<AutoscalingRunnerSet> {
  return async (obj, patch, step) => {
    const { namespace = '', name = '' } = obj.metadata ?? {};
    if (step === 'add')
      return client.mergePatch<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, namespace, name, patch);
    const latest = await client.get<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, namespace, name);
    return client.mergePatch<AutoscalingRunnerSet>(
      AutoscalingRunnerSetKind,
      namespace,
      name,
      finalizersPatch(latest, withoutFinalizers(latest, AUTOSCALING_RUNNER_SET_FINALIZER)),
    );
  };
}
