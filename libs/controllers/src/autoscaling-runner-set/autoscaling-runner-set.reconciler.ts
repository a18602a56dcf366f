import {
  AUTOSCALING_RUNNER_SET_FINALIZER,
  Annotations,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  AutoscalingRunnerSetPhase,
  EphemeralRunnerSetPhase,
  ScaleSetConditionTypes,
  integrityHash,
} from '@aro/api';
import type { ActionsServiceClient } from '@aro/actions';
import {
  type FinalizerWriter,
  ReconcileContext,
  Reconciler,
  Request,
  Result,
  done,
  finalizersPatch,
  requeueAfter,
  withoutFinalizers,
  reconcileFinalized,
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
import { findCondition, setCondition } from '../shared/conditions';

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
export class AutoscalingRunnerSetReconciler implements Reconciler {
  private readonly ctx: ScaleSetContext;
  private readonly status: ScaleSetStatusWriter;
  private readonly scaleSet: ScaleSetSync;
  private readonly listener: ListenerSync;
  private readonly runnerSet: RunnerSetSync;
  private readonly finalizer: ScaleSetFinalizer;
  private readonly legacyRunnerSets: LegacyRunnerSets;
  private readonly credentialChange: CredentialChangeWatch;
  private readonly forgottenProtection: ForgottenProtection;

  constructor(deps: AutoscalingRunnerSetReconcilerDeps, options: AutoscalingRunnerSetReconcilerOptions) {
    this.ctx = scaleSetContext(deps, options);
    this.status = new ScaleSetStatusWriter(this.ctx);
    this.scaleSet = new ScaleSetSync(this.ctx);
    this.listener = new ListenerSync(this.ctx, this.status);
    this.runnerSet = new RunnerSetSync(this.ctx, this.listener, this.status);
    this.finalizer = new ScaleSetFinalizer(this.ctx, this.listener, this.status);
    this.legacyRunnerSets = new LegacyRunnerSets(this.ctx);
    this.credentialChange = new CredentialChangeWatch(this.ctx);
    this.forgottenProtection = new ForgottenProtection(this.ctx);
  }

  reconcile(req: Request, ctx: ReconcileContext): Promise<Result> {
    const callSignal = (): AbortSignal =>
      AbortSignal.any([ctx.signal, AbortSignal.timeout(this.ctx.opts.actionsCallTimeoutMs)]);
    return reconcileFinalized<AutoscalingRunnerSet>(req, ctx, {
      reader: this.ctx.cache,
      kind: AutoscalingRunnerSetKind,
      finalizer: { name: AUTOSCALING_RUNNER_SET_FINALIZER },
      write: this.writeFinalizers,
      memory: this.ctx.memory,
      apply: (live) => this.apply(live, callSignal),
      cleanup: (deleting) => this.finalizer.finalize(deleting, callSignal),
    });
  }

  /**
   * The finalizer's removal is patched from the set as it is now, not as the pass read it: the
   * cleanup wrote to the set (its scale set annotations), so the version read would be refused.
   */
  private readonly writeFinalizers: FinalizerWriter<AutoscalingRunnerSet> = async (obj, patch, step) => {
    const { namespace = '', name = '' } = obj.metadata ?? {};
    const client = this.ctx.client;
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

  /** A live set carrying the finalizer: its scale set, its runner set, its listener. */
  private async apply(pass: ScaleSetPass, callSignal: () => AbortSignal): Promise<Result> {
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
    const retiring = await this.legacyRunnerSets.retire(ars, log);
    if (runnerSet === 'created') return done;
    if (runnerSet.status?.phase === EphemeralRunnerSetPhase.Outdated) {
      // Stop scaling: the listener would only ask for runners that cannot run. No delete/recreate
      // loop (upstream #4600): the set stays as it is until the template changes.
      await this.listener.delete(ars, log);
      await this.status.updateStatus(ars, runnerSet, AutoscalingRunnerSetPhase.Outdated);
      return done;
    }
    const desiredSpec = desiredRunnerSpec(ars, scaleSetId);
    if (integrityHash(desiredSpec) !== integrityHash(runnerSet.spec.ephemeralRunnerSpec)) {
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
    await this.listener.reconcile(ars, scaleSetId, log);
    if (
      findCondition(ars.status?.conditions, ScaleSetConditionTypes.listenerConfigured)?.status === 'False'
    ) {
      // Configured since (the controller restarted with an image): say so instead of a stale refusal.
      await this.status.patchStatus(ars, {
        conditions: setCondition(
          ars.status?.conditions,
          {
            type: ScaleSetConditionTypes.listenerConfigured,
            status: 'True',
            reason: 'ListenerImageConfigured',
            message: 'The controller has a listener image',
          },
          new Date(this.ctx.now()),
        ),
      });
    }
    await this.status.updateStatus(ars, runnerSet, AutoscalingRunnerSetPhase.Running);
    // A retired set's last runner leaving may not change the set itself: look again soon.
    if (retiring) return requeueAfter(this.ctx.opts.drainPollMs);
    const sinceCheck = this.ctx.now() - (this.ctx.lastChecked.get(key) ?? 0);
    return requeueAfter(Math.max(1, this.ctx.opts.scaleSetCheckIntervalMs - sinceCheck));
  }
}
