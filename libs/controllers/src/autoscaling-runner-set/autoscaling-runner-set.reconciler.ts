import { isDeepStrictEqual } from 'node:util';
import {
  AUTOSCALING_RUNNER_SET_FINALIZER,
  Annotations,
  AutoscalingListener,
  AutoscalingListenerKind,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  AutoscalingRunnerSetPhase,
  AutoscalingRunnerSetStatus,
  DEFAULT_RUNNER_GROUP,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
  EphemeralRunnerSetPhase,
  ScaleSetCondition,
  ScaleSetConditionTypes,
  ScaleSetReasons,
  integrityHash,
} from '@aro/api';
import type { ActionsServiceClient } from '@aro/actions';
import { KubeClient, Reader, Reconciler, ReconcileContext, Request, Result, isNotFound } from '@aro/kube';
import type { Logger } from '@aro/observability';
import { SecretResolver, configHolderOfScaleSet } from '@aro/secrets';
import type { EventRecorder } from '../events/event-recorder';
import {
  describeError,
  exponentialBackoffMs,
  finalizersPatch,
  findCondition,
  githubUrlLabels,
  hasFinalizer,
  setCondition,
  withFinalizer,
  withoutFinalizer,
} from '../ephemeral-runner-set/scale-set-common';
import { removeCleanupProtection } from './cleanup-protection';
import { classifyScaleSetFailure } from './failure-reasons';
import {
  ListenerSettings,
  buildAutoscalingListener,
  buildEphemeralRunnerSet,
  desiredRunnerSetMeta,
  desiredRunnerSpec,
  listenerNameOf,
  runnerGroupName,
  runnerScaleSetHash,
  scaleSetIdOf,
  scaleSetName,
} from './runner-scale-set-resources';
import { findOrCreateScaleSet, runnerGroupId, scaleSetById } from './scale-set-registration';

export interface AutoscalingRunnerSetReconcilerOptions {
  /** Namespace of the listeners (the controller's own). */
  controllerNamespace: string;
  /** Image of the listener pods. */
  listenerImage: string;
  listenerImagePullSecrets?: readonly string[];
  excludeLabelPropagationPrefixes?: readonly string[];
  /**
   * `eventual` (upstream HEAD, and the default): a runner spec change waits until no runner is
   * pending or running (the listener is stopped and idle runners drained), then patches the set in
   * place. `immediate`: patches at once; idle runners are replaced, busy ones finish their job.
   */
  updateStrategy?: 'immediate' | 'eventual';
  /** How often the scale set's existence on the service is checked (it deletes long-offline ones). */
  scaleSetCheckIntervalMs?: number;
  errorBackoffBaseMs?: number;
  errorBackoffMaxMs?: number;
  deletionPollMs?: number;
  drainPollMs?: number;
  actionsCallTimeoutMs?: number;
}

export interface AutoscalingRunnerSetReconcilerDeps {
  client: KubeClient;
  cache: Reader;
  resolver: SecretResolver;
  events?: EventRecorder;
  logger: Logger;
  now?: () => number;
}

const done: Result = {};
const requeueAfter = (ms: number): Result => ({ requeueAfterMs: Math.max(1, Math.ceil(ms)) });

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
  private readonly opts: Required<AutoscalingRunnerSetReconcilerOptions>;
  private readonly now: () => number;
  private readonly failures = new Map<string, number>();
  private readonly lastChecked = new Map<string, number>();

  constructor(
    private readonly deps: AutoscalingRunnerSetReconcilerDeps,
    options: AutoscalingRunnerSetReconcilerOptions,
  ) {
    this.now = deps.now ?? Date.now;
    this.opts = {
      controllerNamespace: options.controllerNamespace,
      listenerImage: options.listenerImage,
      listenerImagePullSecrets: options.listenerImagePullSecrets ?? [],
      excludeLabelPropagationPrefixes: options.excludeLabelPropagationPrefixes ?? [],
      updateStrategy: options.updateStrategy ?? 'eventual',
      scaleSetCheckIntervalMs: options.scaleSetCheckIntervalMs ?? 5 * 60_000,
      errorBackoffBaseMs: options.errorBackoffBaseMs ?? 5_000,
      errorBackoffMaxMs: options.errorBackoffMaxMs ?? 5 * 60_000,
      deletionPollMs: options.deletionPollMs ?? 5_000,
      drainPollMs: options.drainPollMs ?? 1_000,
      actionsCallTimeoutMs: options.actionsCallTimeoutMs ?? 30_000,
    };
  }

  async reconcile(req: Request, { signal, log }: ReconcileContext): Promise<Result> {
    const key = `${req.namespace}/${req.name}`;
    let ars: AutoscalingRunnerSet;
    try {
      ars = await this.deps.cache.get<AutoscalingRunnerSet>(
        AutoscalingRunnerSetKind,
        req.namespace,
        req.name,
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
      this.failures.delete(key);
      this.lastChecked.delete(key);
      return done;
    }
    const callSignal = (): AbortSignal =>
      AbortSignal.any([signal, AbortSignal.timeout(this.opts.actionsCallTimeoutMs)]);

    if (ars.metadata?.deletionTimestamp) return this.finalize(ars, key, callSignal, log);

    if (!hasFinalizer(ars, AUTOSCALING_RUNNER_SET_FINALIZER)) {
      ars = await this.deps.client.mergePatch<AutoscalingRunnerSet>(
        AutoscalingRunnerSetKind,
        req.namespace,
        req.name,
        finalizersPatch(ars, withFinalizer(ars, AUTOSCALING_RUNNER_SET_FINALIZER)),
      );
    }

    const hash = runnerScaleSetHash(ars);
    if (ars.metadata?.annotations?.[Annotations.integrityHash] !== hash) {
      ars = await this.deps.client.mergePatch<AutoscalingRunnerSet>(
        AutoscalingRunnerSetKind,
        req.namespace,
        req.name,
        {
          metadata: { annotations: { [Annotations.integrityHash]: hash } },
        },
      );
      await this.patchStatus(ars, { phase: AutoscalingRunnerSetPhase.Pending });
    }

    // 1. The scale set on the Actions service.
    let scaleSetId: number;
    try {
      // Resolved only when the service must be asked: resolving reads the credential Secret live,
      // and most passes (the runner set's status moving) need nothing from the service.
      let client: Promise<ActionsServiceClient> | undefined;
      const holder = configHolderOfScaleSet(ars);
      const actions = (): Promise<ActionsServiceClient> =>
        (client ??= this.deps.resolver.getActionsClient(holder, callSignal()));
      const outcome = await this.reconcileScaleSet(ars, key, actions, callSignal, log);
      ars = outcome.ars;
      scaleSetId = outcome.scaleSetId;
    } catch (err) {
      if (signal.aborted) throw err;
      return this.recordFailure(ars, key, err, log);
    }
    const hadFailures = this.failures.delete(key);
    const ready = findCondition(ars.status?.conditions, ScaleSetConditionTypes.scaleSetReady);
    if (hadFailures || ready?.status !== 'True') {
      await this.patchStatus(ars, {
        conditions: setCondition(
          ars.status?.conditions,
          {
            type: ScaleSetConditionTypes.scaleSetReady,
            status: 'True',
            reason: 'ScaleSetReady',
            message: `Runner scale set ${scaleSetId} is registered on the Actions service`,
          },
          new Date(this.now()),
        ),
      });
    }

    // 2. The EphemeralRunnerSet.
    const runnerSet = await this.reconcileRunnerSet(ars, scaleSetId, log);
    if (runnerSet === 'created') return done;
    if (runnerSet.status?.phase === EphemeralRunnerSetPhase.Outdated) {
      // Stop scaling: the listener would only ask for runners that cannot run. No delete/recreate
      // loop (upstream #4600): the set stays as it is until the template changes.
      await this.deleteListener(ars, log);
      await this.updateStatus(ars, runnerSet, AutoscalingRunnerSetPhase.Outdated);
      return done;
    }
    const desiredSpec = desiredRunnerSpec(ars, scaleSetId);
    if (integrityHash(desiredSpec) !== integrityHash(runnerSet.spec.ephemeralRunnerSpec)) {
      const busy =
        (runnerSet.status?.pendingEphemeralRunners ?? 0) + (runnerSet.status?.runningEphemeralRunners ?? 0);
      const sameScaleSet = runnerSet.spec.ephemeralRunnerSpec?.runnerScaleSetId === scaleSetId;
      if (this.opts.updateStrategy === 'eventual' && busy > 0 && sameScaleSet) {
        return this.drain(ars, runnerSet, busy, log);
      }
      await this.replaceRunnerSpec(runnerSet, desiredSpec, log);
      return requeueAfter(this.opts.drainPollMs);
    }

    // 3. The listener.
    if (!this.opts.listenerImage) return this.refuseListener(ars, runnerSet, log);
    await this.reconcileListener(ars, scaleSetId, log);
    if (
      findCondition(ars.status?.conditions, ScaleSetConditionTypes.listenerConfigured)?.status === 'False'
    ) {
      // Configured since (the controller restarted with an image): say so instead of a stale refusal.
      await this.patchStatus(ars, {
        conditions: setCondition(
          ars.status?.conditions,
          {
            type: ScaleSetConditionTypes.listenerConfigured,
            status: 'True',
            reason: 'ListenerImageConfigured',
            message: 'The controller has a listener image',
          },
          new Date(this.now()),
        ),
      });
    }
    await this.updateStatus(ars, runnerSet, AutoscalingRunnerSetPhase.Running);
    const sinceCheck = this.now() - (this.lastChecked.get(key) ?? 0);
    return requeueAfter(Math.max(1, this.opts.scaleSetCheckIntervalMs - sinceCheck));
  }

  /**
   * Creates or adopts the scale set, checks now and then that the service still has it (and creates
   * it again if not), and keeps its runner group and name equal to the spec.
   */
  private async reconcileScaleSet(
    ars: AutoscalingRunnerSet,
    key: string,
    actions: () => Promise<ActionsServiceClient>,
    callSignal: () => AbortSignal,
    log: Logger,
  ): Promise<{ ars: AutoscalingRunnerSet; scaleSetId: number }> {
    const namespace = ars.metadata?.namespace ?? '';
    const name = ars.metadata?.name ?? '';
    let id = scaleSetIdOf(ars);
    if (id !== 0 && this.now() - (this.lastChecked.get(key) ?? 0) >= this.opts.scaleSetCheckIntervalMs) {
      const found = await scaleSetById(await actions(), id, callSignal());
      this.lastChecked.set(key, this.now());
      if (!found) {
        log.warn('The Actions service no longer has the scale set; creating it again', { scaleSetId: id });
        this.deps.events?.record(
          ars,
          'Warning',
          ScaleSetReasons.scaleSetRecreated,
          `Runner scale set ${id} is gone from the Actions service (it deletes scale sets that stay offline); creating it again`,
        );
        id = 0;
      }
    }
    if (id === 0) {
      const client = await actions();
      const group = await runnerGroupId(client, ars.spec.runnerGroup, callSignal());
      const { scaleSet, created } = await findOrCreateScaleSet(client, ars, group.id, callSignal());
      this.lastChecked.set(key, this.now());
      log.info(created ? 'Created the runner scale set' : 'Adopted an existing runner scale set', {
        scaleSetId: scaleSet.id,
        runnerGroup: group.name,
      });
      this.deps.events?.record(
        ars,
        'Normal',
        created ? ScaleSetReasons.scaleSetCreated : ScaleSetReasons.scaleSetAdopted,
        `Runner scale set ${scaleSet.name} (ID ${scaleSet.id}) in runner group ${group.name}`,
      );
      const updated = await this.deps.client.mergePatch<AutoscalingRunnerSet>(
        AutoscalingRunnerSetKind,
        namespace,
        name,
        {
          metadata: {
            labels: githubUrlLabels(ars.spec.githubConfigUrl),
            annotations: {
              [Annotations.runnerScaleSetId]: String(scaleSet.id),
              [Annotations.runnerScaleSetName]: scaleSet.name,
              [Annotations.runnerGroupName]: ars.spec.runnerGroup || group.name,
            },
          },
        },
      );
      return { ars: updated, scaleSetId: scaleSet.id };
    }

    const annotations = ars.metadata?.annotations ?? {};
    const wantGroup = runnerGroupName(ars);
    if ((annotations[Annotations.runnerGroupName] ?? '').toLowerCase() !== wantGroup.toLowerCase()) {
      const client = await actions();
      const group = await runnerGroupId(client, ars.spec.runnerGroup, callSignal());
      await client.updateRunnerScaleSet(id, { runnerGroupId: group.id }, { signal: callSignal() });
      log.info('Moved the scale set to another runner group', { scaleSetId: id, runnerGroup: wantGroup });
      this.deps.events?.record(
        ars,
        'Normal',
        ScaleSetReasons.scaleSetUpdated,
        `Runner scale set ${id} moved to runner group ${wantGroup}`,
      );
      ars = await this.deps.client.mergePatch<AutoscalingRunnerSet>(
        AutoscalingRunnerSetKind,
        namespace,
        name,
        {
          metadata: { annotations: { [Annotations.runnerGroupName]: wantGroup } },
        },
      );
    }
    const wantName = scaleSetName(ars);
    if ((ars.metadata?.annotations?.[Annotations.runnerScaleSetName] ?? '') !== wantName) {
      await (await actions()).updateRunnerScaleSet(id, { name: wantName }, { signal: callSignal() });
      log.info('Renamed the scale set', { scaleSetId: id, name: wantName });
      this.deps.events?.record(
        ars,
        'Normal',
        ScaleSetReasons.scaleSetUpdated,
        `Runner scale set ${id} renamed to ${wantName}`,
      );
      ars = await this.deps.client.mergePatch<AutoscalingRunnerSet>(
        AutoscalingRunnerSetKind,
        namespace,
        name,
        {
          metadata: { annotations: { [Annotations.runnerScaleSetName]: wantName } },
        },
      );
    }
    return { ars, scaleSetId: id };
  }

  /** Condition + Warning Event with the cause, and a growing wait before the next attempt. */
  private async recordFailure(
    ars: AutoscalingRunnerSet,
    key: string,
    err: unknown,
    log: Logger,
  ): Promise<Result> {
    const failure = classifyScaleSetFailure(err, ars.spec.proxy);
    const attempts = (this.failures.get(key) ?? 0) + 1;
    this.failures.set(key, attempts);
    const waitMs = exponentialBackoffMs(attempts, this.opts.errorBackoffBaseMs, this.opts.errorBackoffMaxMs);
    log.warn('Cannot reach the runner scale set on the Actions service', {
      reason: failure.reason,
      attempts,
      retryInMs: waitMs,
      err: failure.message,
    });
    const previous = findCondition(ars.status?.conditions, ScaleSetConditionTypes.scaleSetReady);
    if (previous?.reason !== failure.reason || previous.message !== failure.message || attempts === 1) {
      this.deps.events?.record(ars, 'Warning', failure.reason, failure.message);
    }
    await this.patchStatus(ars, {
      conditions: setCondition(
        ars.status?.conditions,
        {
          type: ScaleSetConditionTypes.scaleSetReady,
          status: 'False',
          reason: failure.reason,
          message: failure.message,
        },
        new Date(this.now()),
      ),
    });
    return requeueAfter(waitMs);
  }

  private async reconcileRunnerSet(
    ars: AutoscalingRunnerSet,
    scaleSetId: number,
    log: Logger,
  ): Promise<EphemeralRunnerSet | 'created'> {
    const namespace = ars.metadata?.namespace ?? '';
    const name = ars.metadata?.name ?? '';
    let runnerSet: EphemeralRunnerSet;
    try {
      runnerSet = await this.deps.cache.get<EphemeralRunnerSet>(EphemeralRunnerSetKind, namespace, name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      await this.deps.client.create(
        EphemeralRunnerSetKind,
        buildEphemeralRunnerSet(ars, scaleSetId, this.opts.excludeLabelPropagationPrefixes),
      );
      log.info('Created the EphemeralRunnerSet');
      return 'created';
    }
    const meta = desiredRunnerSetMeta(ars, this.opts.excludeLabelPropagationPrefixes);
    const labelsDiffer = Object.entries(meta.labels).some(([k, v]) => runnerSet.metadata?.labels?.[k] !== v);
    const annotationsDiffer = Object.entries(meta.annotations).some(
      ([k, v]) => runnerSet.metadata?.annotations?.[k] !== v,
    );
    const runnerMetaDiffers = !isDeepStrictEqual(
      runnerSet.spec.ephemeralRunnerMetadata ?? {},
      ars.spec.ephemeralRunnerMetadata ?? {},
    );
    if (labelsDiffer || annotationsDiffer || runnerMetaDiffers) {
      runnerSet = await this.deps.client.mergePatch<EphemeralRunnerSet>(
        EphemeralRunnerSetKind,
        namespace,
        name,
        {
          metadata: { labels: meta.labels, annotations: meta.annotations },
          spec: { ephemeralRunnerMetadata: ars.spec.ephemeralRunnerMetadata ?? null },
        },
      );
      log.info('Updated the metadata of the EphemeralRunnerSet');
    }
    return runnerSet;
  }

  /**
   * The runner spec changed while runners are pending or running. Upstream HEAD waits for them to
   * reach zero before patching the set in place; with the listener stopped nobody would ask the set
   * to let its idle runners go, so the set is told so (replicas 0, patch 0): idle runners leave,
   * busy ones finish their job, then the spec is patched and the listener comes back.
   */
  private async drain(
    ars: AutoscalingRunnerSet,
    runnerSet: EphemeralRunnerSet,
    busy: number,
    log: Logger,
  ): Promise<Result> {
    log.info('Draining runners before updating the runner spec', { pendingOrRunning: busy });
    const draining = findCondition(ars.status?.conditions, ScaleSetConditionTypes.scaleSetReady);
    if (draining?.reason !== ScaleSetReasons.drainingForUpdate) {
      this.deps.events?.record(
        ars,
        'Normal',
        ScaleSetReasons.drainingForUpdate,
        `Waiting for ${busy} runner(s) to finish before updating the runner spec`,
      );
    }
    await this.deleteListener(ars, log);
    if ((runnerSet.spec.replicas ?? 0) !== 0 || runnerSet.spec.patchID !== 0) {
      await this.deps.client.mergePatch(
        EphemeralRunnerSetKind,
        runnerSet.metadata?.namespace ?? '',
        runnerSet.metadata?.name ?? '',
        {
          spec: { replicas: 0, patchID: 0 },
        },
      );
    }
    await this.updateStatus(ars, runnerSet, AutoscalingRunnerSetPhase.Pending);
    return requeueAfter(this.opts.drainPollMs);
  }

  private async replaceRunnerSpec(
    runnerSet: EphemeralRunnerSet,
    spec: EphemeralRunnerSet['spec']['ephemeralRunnerSpec'],
    log: Logger,
  ): Promise<void> {
    // A PUT, not a merge patch: fields removed from the template must go from the runner spec too.
    const live = await this.deps.client.get<EphemeralRunnerSet>(
      EphemeralRunnerSetKind,
      runnerSet.metadata?.namespace ?? '',
      runnerSet.metadata?.name ?? '',
    );
    await this.deps.client.replace(EphemeralRunnerSetKind, {
      ...live,
      spec: { ...live.spec, ephemeralRunnerSpec: spec },
    });
    log.info('Updated the runner spec of the EphemeralRunnerSet in place');
  }

  /**
   * Without a listener image no listener can run, so nothing would ever scale the set. The app still
   * starts (EphemeralRunner-only users need no image); each scale set says why it does not scale, on
   * its status and in one Warning Event, and waits: the image only changes with a restart.
   */
  private async refuseListener(
    ars: AutoscalingRunnerSet,
    runnerSet: EphemeralRunnerSet,
    log: Logger,
  ): Promise<Result> {
    const message =
      'No listener image is configured: set CONTROLLER_MANAGER_CONTAINER_IMAGE on the controller (the chart sets it to the controller image)';
    const previous = findCondition(ars.status?.conditions, ScaleSetConditionTypes.listenerConfigured);
    if (previous?.reason !== ScaleSetReasons.listenerImageMissing) {
      log.warn('Cannot create the listener of the scale set', {
        reason: ScaleSetReasons.listenerImageMissing,
      });
      this.deps.events?.record(ars, 'Warning', ScaleSetReasons.listenerImageMissing, message);
      await this.patchStatus(ars, {
        conditions: setCondition(
          ars.status?.conditions,
          {
            type: ScaleSetConditionTypes.listenerConfigured,
            status: 'False',
            reason: ScaleSetReasons.listenerImageMissing,
            message,
          },
          new Date(this.now()),
        ),
      });
    }
    await this.updateStatus(ars, runnerSet, AutoscalingRunnerSetPhase.Pending);
    return done;
  }

  private async reconcileListener(ars: AutoscalingRunnerSet, scaleSetId: number, log: Logger): Promise<void> {
    const settings: ListenerSettings = {
      controllerNamespace: this.opts.controllerNamespace,
      listenerImage: this.opts.listenerImage,
      imagePullSecrets: this.opts.listenerImagePullSecrets,
      excludeLabelPropagationPrefixes: this.opts.excludeLabelPropagationPrefixes,
    };
    const desired = buildAutoscalingListener(ars, scaleSetId, settings);
    const name = desired.metadata?.name ?? '';
    let current: AutoscalingListener | undefined;
    try {
      current = await this.deps.cache.get<AutoscalingListener>(
        AutoscalingListenerKind,
        this.opts.controllerNamespace,
        name,
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    if (!current) {
      try {
        await this.deps.client.create(AutoscalingListenerKind, desired);
        log.info('Created the AutoscalingListener', { listener: `${this.opts.controllerNamespace}/${name}` });
      } catch (err) {
        // Still being deleted after a change: the next pass creates it.
        if (!(err instanceof Error && /already exists|AlreadyExists/.test(err.message))) throw err;
      }
      return;
    }
    if (current.metadata?.deletionTimestamp) return;
    if (
      current.metadata?.annotations?.[Annotations.integrityHash] !==
      desired.metadata?.annotations?.[Annotations.integrityHash]
    ) {
      log.info('The listener spec changed; recreating the listener', { listener: name });
      await this.deleteListener(ars, log);
    }
  }

  private async deleteListener(ars: AutoscalingRunnerSet, log: Logger): Promise<boolean> {
    const name = listenerNameOf(ars);
    try {
      await this.deps.client.delete(AutoscalingListenerKind, this.opts.controllerNamespace, name);
      log.debug('Deleted the listener', { listener: name });
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  private async exists(
    kind: typeof AutoscalingListenerKind,
    namespace: string,
    name: string,
  ): Promise<boolean> {
    try {
      await this.deps.client.get(kind, namespace, name);
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  /**
   * Deletion, in upstream's order: the listener (so nothing scales any more), the EphemeralRunnerSet
   * and its runners (waiting for busy ones), the scale set on the service, the chart's cleanup
   * protection on the objects it created for this set, then the finalizer.
   */
  private async finalize(
    ars: AutoscalingRunnerSet,
    key: string,
    callSignal: () => AbortSignal,
    log: Logger,
  ): Promise<Result> {
    if (!hasFinalizer(ars, AUTOSCALING_RUNNER_SET_FINALIZER)) return done;
    const namespace = ars.metadata?.namespace ?? '';
    const name = ars.metadata?.name ?? '';
    const listenerName = listenerNameOf(ars);
    if (await this.exists(AutoscalingListenerKind, this.opts.controllerNamespace, listenerName)) {
      await this.deleteListener(ars, log);
      log.info('Waiting for the listener to go', { listener: listenerName });
      return requeueAfter(this.opts.deletionPollMs);
    }
    if (await this.exists(EphemeralRunnerSetKind, namespace, name)) {
      try {
        await this.deps.client.delete(EphemeralRunnerSetKind, namespace, name);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      log.info('Waiting for the EphemeralRunnerSet and its runners to go');
      return requeueAfter(this.opts.deletionPollMs);
    }
    const id = scaleSetIdOf(ars) || (await this.scaleSetOfDeletedSet(ars, callSignal, log));
    if (id !== 0) {
      try {
        const client = await this.deps.resolver.getActionsClient(configHolderOfScaleSet(ars), callSignal());
        await client.deleteRunnerScaleSet(id, { signal: callSignal() });
        log.info('Deleted the runner scale set from the Actions service', { scaleSetId: id });
        this.deps.events?.record(
          ars,
          'Normal',
          ScaleSetReasons.scaleSetDeleted,
          `Runner scale set ${id} deleted from the Actions service`,
        );
      } catch (err) {
        const isGone =
          err instanceof Error && 'statusCode' in err && (err as { statusCode?: number }).statusCode === 404;
        if (!isGone) return this.recordFailure(ars, key, err, log);
      }
      await this.deps.client.mergePatch(AutoscalingRunnerSetKind, namespace, name, {
        metadata: { annotations: { [Annotations.runnerScaleSetId]: null } },
      });
    }
    await removeCleanupProtection(this.deps.client, ars, log);
    const latest = await this.deps.client.get<AutoscalingRunnerSet>(
      AutoscalingRunnerSetKind,
      namespace,
      name,
    );
    await this.deps.client.mergePatch(
      AutoscalingRunnerSetKind,
      namespace,
      name,
      finalizersPatch(latest, withoutFinalizer(latest, AUTOSCALING_RUNNER_SET_FINALIZER)),
    );
    this.failures.delete(key);
    this.lastChecked.delete(key);
    log.info('Removed the finalizer of a deleted AutoscalingRunnerSet');
    return done;
  }

  /**
   * The scale set of a deleted set that lost its `runner-scale-set-id` annotation (an edit, a
   * `kubectl replace`), looked up by the name it was registered under in its runner group, so that
   * it does not stay on the service (upstream leaves it there). Only a set that had one is looked up:
   * the `runner-scale-set-name` annotation is written with the ID. A failure is a Warning Event, not
   * a wait: without the ID the controller cannot know there is a scale set to delete, and a deletion
   * held up by a refused credential would hold up its namespace with it. 0 when there is none.
   */
  private async scaleSetOfDeletedSet(
    ars: AutoscalingRunnerSet,
    callSignal: () => AbortSignal,
    log: Logger,
  ): Promise<number> {
    const registeredName = ars.metadata?.annotations?.[Annotations.runnerScaleSetName];
    if (!registeredName) return 0;
    const group = ars.metadata?.annotations?.[Annotations.runnerGroupName] ?? ars.spec.runnerGroup;
    try {
      const client = await this.deps.resolver.getActionsClient(configHolderOfScaleSet(ars), callSignal());
      const groupId = await runnerGroupId(
        client,
        group?.toLowerCase() === DEFAULT_RUNNER_GROUP.toLowerCase() ? undefined : group,
        callSignal(),
      );
      const found = await client.getRunnerScaleSet(groupId.id, registeredName, { signal: callSignal() });
      if (found) {
        log.info('Found the scale set of a deleted set without its ID annotation by name', {
          scaleSetId: found.id,
          scaleSetName: registeredName,
        });
      }
      return found?.id ?? 0;
    } catch (err) {
      const failure = classifyScaleSetFailure(err, ars.spec.proxy);
      log.warn('Cannot look up the scale set of a deleted set without its ID; deleting the set without it', {
        reason: failure.reason,
        scaleSetName: registeredName,
        err: failure.message,
      });
      this.deps.events?.record(
        ars,
        'Warning',
        failure.reason,
        `Runner scale set ${registeredName} could not be looked up to delete it (the set has no runner-scale-set-id annotation): ${failure.message}`,
      );
      return 0;
    }
  }

  private async updateStatus(
    ars: AutoscalingRunnerSet,
    runnerSet: EphemeralRunnerSet,
    phase: AutoscalingRunnerSetPhase,
  ): Promise<void> {
    let conditions = ars.status?.conditions;
    const outdated = phase === AutoscalingRunnerSetPhase.Outdated;
    const version = findCondition(conditions, ScaleSetConditionTypes.runnerVersionCurrent);
    if (outdated || version) {
      const source = findCondition(runnerSet.status?.conditions, ScaleSetConditionTypes.runnerVersionCurrent);
      const next: Omit<ScaleSetCondition, 'lastTransitionTime'> = outdated
        ? {
            type: ScaleSetConditionTypes.runnerVersionCurrent,
            status: 'False',
            reason: ScaleSetReasons.outdated,
            message:
              source?.message ?? 'A runner reported a deprecated runner version; update the runner image',
          }
        : {
            type: ScaleSetConditionTypes.runnerVersionCurrent,
            status: 'True',
            reason: 'RunnerVersionCurrent',
            message: 'Runners are current',
          };
      if (version?.status !== next.status) conditions = setCondition(conditions, next, new Date(this.now()));
      if (outdated && version?.status !== 'False') {
        this.deps.events?.record(
          ars,
          'Warning',
          ScaleSetReasons.outdated,
          'Runners report a deprecated runner version: the listener is stopped until the runner template changes',
        );
      }
    }
    await this.patchStatus(ars, {
      phase,
      currentRunners: runnerSet.status?.currentReplicas ?? 0,
      pendingEphemeralRunners: runnerSet.status?.pendingEphemeralRunners ?? 0,
      runningEphemeralRunners: runnerSet.status?.runningEphemeralRunners ?? 0,
      failedEphemeralRunners: runnerSet.status?.failedEphemeralRunners ?? 0,
      ...(conditions ? { conditions } : {}),
    });
  }

  /** Patches the status fields given, only when one of them differs. */
  private async patchStatus(ars: AutoscalingRunnerSet, change: AutoscalingRunnerSetStatus): Promise<void> {
    const current = (ars.status ?? {}) as Record<string, unknown>;
    const differs = Object.entries(change).some(([k, v]) => !isDeepStrictEqual(current[k], v));
    if (!differs) return;
    try {
      const updated = await this.deps.client.mergePatchStatus<AutoscalingRunnerSet>(
        AutoscalingRunnerSetKind,
        ars.metadata?.namespace ?? '',
        ars.metadata?.name ?? '',
        { status: change },
      );
      ars.status = updated.status;
    } catch (err) {
      if (!isNotFound(err))
        throw new Error(
          `AutoscalingRunnerSet ${ars.metadata?.namespace}/${ars.metadata?.name}: status patch failed: ${describeError(err)}`,
          { cause: err },
        );
    }
  }
}
