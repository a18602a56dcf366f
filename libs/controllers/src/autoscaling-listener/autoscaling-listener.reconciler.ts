import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import {
  AUTOSCALING_LISTENER_CONTAINER_NAME,
  AUTOSCALING_LISTENER_FINALIZER,
  Annotations,
  AutoscalingListener,
  AutoscalingListenerKind,
  AutoscalingListenerStatus,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  ResourceKind,
  ScaleSetConditionTypes,
  ScaleSetReasons,
  integrityHash,
  listenerConfigSecretName,
} from '@aro/api';
import {
  KubeClient,
  KubeObject,
  PodKind,
  Reader,
  Reconciler,
  ReconcileContext,
  Request,
  Result,
  RoleBindingKind,
  RoleKind,
  SecretKind,
  ServiceAccountKind,
  isNotFound,
} from '@aro/kube';
import type { Logger } from '@aro/observability';
import type { SecretResolver } from '@aro/secrets';
import { isDeepStrictEqual } from 'node:util';
import type { EventRecorder } from '../events/event-recorder';
import { classifyScaleSetFailure } from '../autoscaling-runner-set/failure-reasons';
import {
  describeError,
  exponentialBackoffMs,
  finalizersPatch,
  hasFinalizer,
  scaleSetMetricLabels,
  setCondition,
  withFinalizer,
  withoutFinalizer,
} from '../ephemeral-runner-set/scale-set-common';
import { buildListenerConfig, type ListenerConfigSettings } from './listener-config';
import { ListenerConfigRefresh } from './listener-config-refresh';
import type { ListenerMetrics } from './listener-metrics';
import {
  buildConfigSecret,
  buildListenerPod,
  buildRole,
  buildRoleBinding,
  buildServiceAccount,
  hashOf,
} from './listener-resources';

export interface AutoscalingListenerReconcilerOptions {
  /** Where the listener serves its metrics (`:8080`); `0` or empty disables them. */
  metricsAddr?: string;
  metricsEndpoint?: string;
  logLevel?: string;
  logFormat?: string;
  /** First wait before an ended listener pod is recreated; doubles per failure in a row. */
  restartBackoffBaseMs?: number;
  restartBackoffMaxMs?: number;
  /** A listener pod running this long is taken as healthy: its failure count starts again. */
  stableAfterMs?: number;
  deletionPollMs?: number;
  resolveTimeoutMs?: number;
  /**
   * How often each listener's config is built again from the credential Secret, so a rotated
   * credential reaches the listener (Secrets are not watched); between refreshes it is built only
   * when the listener changes or its config Secret is gone.
   */
  credentialRefreshIntervalMs?: number;
}

export interface AutoscalingListenerReconcilerDeps {
  client: KubeClient;
  cache: Reader;
  resolver: SecretResolver;
  metrics?: ListenerMetrics;
  events?: EventRecorder;
  logger: Logger;
  now?: () => number;
}

const done: Result = {};
const requeueAfter = (ms: number): Result => ({ requeueAfterMs: Math.max(1, Math.ceil(ms)) });

/** The result that comes back first: an immediate requeue, else the shorter wait. */
function sooner(a: Result, b: Result): Result {
  if (a.requeue && a.requeueAfterMs === undefined) return a;
  if (a.requeueAfterMs === undefined) return b;
  if (b.requeueAfterMs === undefined) return a;
  return a.requeueAfterMs <= b.requeueAfterMs ? a : b;
}

type Ended = { reason: string; message: string } | undefined;

/** Why a listener pod is over, or undefined while it lives: evicted, or its listener container exited. */
function podEnded(pod: V1Pod): Ended {
  if (pod.status?.reason === 'Evicted') {
    return {
      reason: ScaleSetReasons.listenerPodEvicted,
      message: pod.status.message ?? 'the listener pod was evicted',
    };
  }
  const container = pod.status?.containerStatuses?.find(
    (c) => c.name === AUTOSCALING_LISTENER_CONTAINER_NAME,
  );
  const terminated = container?.state?.terminated;
  if (terminated) {
    return {
      reason: ScaleSetReasons.listenerPodEnded,
      message: `the listener container exited with code ${terminated.exitCode}${terminated.reason ? ` (${terminated.reason})` : ''}${terminated.message ? `: ${terminated.message}` : ''}`,
    };
  }
  if (pod.status?.phase === 'Failed' || pod.status?.phase === 'Succeeded') {
    return {
      reason: ScaleSetReasons.listenerPodEnded,
      message: `the listener pod is ${pod.status.phase}${pod.status.reason ? ` (${pod.status.reason})` : ''}`,
    };
  }
  return undefined;
}

function listenerRunningSince(pod: V1Pod): number | undefined {
  const container = pod.status?.containerStatuses?.find(
    (c) => c.name === AUTOSCALING_LISTENER_CONTAINER_NAME,
  );
  const startedAt = container?.state?.running?.startedAt;
  return startedAt ? new Date(startedAt).getTime() : undefined;
}

/**
 * The AutoscalingListener reconciler: the listener pod and what it needs (ServiceAccount, Role and
 * RoleBinding in the scale set's namespace, config Secret), each rebuilt when its integrity hash
 * changes.
 *
 * An ended or evicted listener pod is recreated after an exponential backoff (upstream recreates at
 * once, #4656, which turns a revoked token or a rate limit into a tight loop of pods and API calls);
 * why and how often is on the listener's status, and each restart is an Event.
 */
export class AutoscalingListenerReconciler implements Reconciler {
  private readonly opts: Required<AutoscalingListenerReconcilerOptions>;
  private readonly now: () => number;
  private readonly configRefresh: ListenerConfigRefresh;

  constructor(
    private readonly deps: AutoscalingListenerReconcilerDeps,
    options: AutoscalingListenerReconcilerOptions = {},
  ) {
    this.now = deps.now ?? Date.now;
    this.opts = {
      metricsAddr: options.metricsAddr ?? ':8080',
      metricsEndpoint: options.metricsEndpoint ?? '/metrics',
      logLevel: options.logLevel ?? 'info',
      logFormat: options.logFormat ?? 'json',
      restartBackoffBaseMs: options.restartBackoffBaseMs ?? 5_000,
      restartBackoffMaxMs: options.restartBackoffMaxMs ?? 10 * 60_000,
      stableAfterMs: options.stableAfterMs ?? 2 * 60_000,
      deletionPollMs: options.deletionPollMs ?? 1_000,
      resolveTimeoutMs: options.resolveTimeoutMs ?? 30_000,
      credentialRefreshIntervalMs: options.credentialRefreshIntervalMs ?? 60_000,
    };
    this.configRefresh = new ListenerConfigRefresh(this.opts.credentialRefreshIntervalMs, this.now);
  }

  async reconcile(req: Request, { signal, log }: ReconcileContext): Promise<Result> {
    const key = `${req.namespace}/${req.name}`;
    let listener: AutoscalingListener;
    try {
      listener = await this.deps.cache.get<AutoscalingListener>(
        AutoscalingListenerKind,
        req.namespace,
        req.name,
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
      this.deps.metrics?.forget(key);
      this.configRefresh.forget(key);
      return done;
    }
    if (listener.metadata?.deletionTimestamp) return this.finalize(listener, key, log);

    if (!hasFinalizer(listener, AUTOSCALING_LISTENER_FINALIZER)) {
      listener = await this.deps.client.mergePatch<AutoscalingListener>(
        AutoscalingListenerKind,
        req.namespace,
        req.name,
        finalizersPatch(listener, withFinalizer(listener, AUTOSCALING_LISTENER_FINALIZER)),
      );
    }

    let ars: AutoscalingRunnerSet;
    try {
      ars = await this.deps.cache.get<AutoscalingRunnerSet>(
        AutoscalingRunnerSetKind,
        listener.spec.autoscalingRunnerSetNamespace ?? '',
        listener.spec.autoscalingRunnerSetName ?? '',
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
      // A listener of no scale set would scale nothing: it goes (upstream does the same).
      log.info('The listener has no AutoscalingRunnerSet; deleting it');
      await this.deleteIgnoringNotFound(AutoscalingListenerKind, req.namespace, req.name);
      return done;
    }
    this.deps.metrics?.labels(
      key,
      scaleSetMetricLabels(ars.metadata?.name ?? '', ars.metadata?.namespace ?? '', ars.spec.githubConfigUrl),
    );

    const sa = await this.apply(ServiceAccountKind, buildServiceAccount(listener), log);
    const role = await this.apply(RoleKind, buildRole(listener), log);
    const binding = await this.apply(RoleBindingKind, buildRoleBinding(listener), log);
    const configHash = await this.reconcileConfig(listener, ars, key, signal, log);
    if (typeof configHash !== 'string') return configHash;

    const desired = buildListenerPod(
      listener,
      { metricsAddr: this.opts.metricsAddr, metricsEndpoint: this.opts.metricsEndpoint },
      [hashOf(sa), hashOf(role), hashOf(binding), configHash],
    );
    return sooner(
      await this.reconcilePod(listener, key, desired, log),
      requeueAfter(this.configRefresh.refreshDueInMs(key) ?? this.opts.credentialRefreshIntervalMs),
    );
  }

  /**
   * The config Secret, built only when `ListenerConfigRefresh` says so (building reads the
   * credential Secret live); its integrity hash, or the Result of a pass that could not build it.
   */
  private async reconcileConfig(
    listener: AutoscalingListener,
    ars: AutoscalingRunnerSet,
    key: string,
    signal: AbortSignal,
    log: Logger,
  ): Promise<string | Result> {
    const settings: ListenerConfigSettings = {
      scaleSetName:
        ars.metadata?.annotations?.[Annotations.runnerScaleSetName] ??
        ars.spec.runnerScaleSetName ??
        ars.metadata?.name ??
        '',
      logLevel: this.opts.logLevel,
      logFormat: this.opts.logFormat,
      metricsAddr: this.opts.metricsAddr,
      metricsEndpoint: this.opts.metricsEndpoint,
    };
    const inputs = integrityHash({ uid: listener.metadata?.uid, spec: listener.spec, settings });
    const current = await this.readIgnoringNotFound<V1Secret>(
      SecretKind,
      listener.metadata?.namespace ?? '',
      listenerConfigSecretName(listener.metadata?.name ?? ''),
    );
    const reason = this.configRefresh.reasonToBuild(key, inputs, hashOf(current));
    const currentHash = hashOf(current);
    if (reason === undefined && currentHash !== undefined) return currentHash;
    try {
      const config = await buildListenerConfig(
        this.deps.resolver,
        listener,
        settings,
        AbortSignal.any([signal, AbortSignal.timeout(this.opts.resolveTimeoutMs)]),
      );
      const applied = hashOf(await this.apply(SecretKind, buildConfigSecret(listener, config), log, current));
      this.deps.metrics?.configBuilt(reason ?? 'missing');
      if (applied !== undefined) this.configRefresh.recordBuilt(key, inputs, applied);
      log.debug('Built the listener config', { reason });
      return applied ?? '';
    } catch (err) {
      if (signal.aborted) throw err;
      const failure = classifyScaleSetFailure(err, listener.spec.proxy);
      log.warn('Cannot build the listener configuration', { reason: failure.reason, err: failure.message });
      this.deps.events?.record(listener, 'Warning', failure.reason, failure.message);
      await this.patchStatus(listener, {
        conditions: setCondition(listener.status?.conditions, {
          type: ScaleSetConditionTypes.listenerRunning,
          status: 'False',
          reason: failure.reason,
          message: failure.message,
        }),
      });
      return requeueAfter(this.backoffMs(listener.status?.restarts ?? 0));
    }
  }

  private async readIgnoringNotFound<T extends KubeObject>(
    kind: ResourceKind,
    namespace: string,
    name: string,
  ): Promise<T | undefined> {
    try {
      return await this.deps.client.get<T>(kind, namespace, name);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  private backoffMs(restarts: number): number {
    return exponentialBackoffMs(
      Math.max(1, restarts),
      this.opts.restartBackoffBaseMs,
      this.opts.restartBackoffMaxMs,
    );
  }

  private async reconcilePod(
    listener: AutoscalingListener,
    key: string,
    desired: V1Pod,
    log: Logger,
  ): Promise<Result> {
    const namespace = listener.metadata?.namespace ?? '';
    const name = listener.metadata?.name ?? '';
    let pod: V1Pod | undefined;
    try {
      pod = await this.deps.cache.get<V1Pod>(PodKind, namespace, name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    const status = listener.status ?? {};
    if (!pod) {
      this.deps.metrics?.set(key, false);
      const restarts = status.restarts ?? 0;
      if (restarts > 0 && status.lastRestartTime) {
        const readyAt = new Date(status.lastRestartTime).getTime() + this.backoffMs(restarts);
        if (this.now() < readyAt) {
          log.info('Waiting before recreating the listener pod', { restarts, waitMs: readyAt - this.now() });
          return requeueAfter(readyAt - this.now());
        }
      }
      await this.deps.client.create(PodKind, desired);
      log.info('Created the listener pod', { restarts });
      return done;
    }
    if (pod.metadata?.deletionTimestamp) return requeueAfter(this.opts.deletionPollMs);

    const ended = podEnded(pod);
    if (ended) {
      const restarts = (status.restarts ?? 0) + 1;
      const waitMs = this.backoffMs(restarts);
      log.warn('The listener pod ended; recreating it after a backoff', {
        reason: ended.reason,
        restarts,
        waitMs,
        detail: ended.message,
      });
      this.deps.events?.record(
        listener,
        'Warning',
        ended.reason,
        `${ended.message}; recreating the pod in ${Math.round(waitMs / 1000)} s (restart ${restarts})`,
      );
      await this.patchStatus(listener, {
        restarts,
        reason: ended.reason,
        message: ended.message,
        lastRestartTime: new Date(this.now()).toISOString(),
        conditions: setCondition(listener.status?.conditions, {
          type: ScaleSetConditionTypes.listenerRunning,
          status: 'False',
          reason: ended.reason,
          message: ended.message,
        }),
      });
      this.deps.metrics?.set(key, false);
      await this.deleteIgnoringNotFound(PodKind, namespace, name, pod.metadata?.uid);
      return requeueAfter(waitMs);
    }

    if (hashOf(pod) !== hashOf(desired)) {
      log.info('The listener pod is out of date; recreating it');
      await this.deleteIgnoringNotFound(PodKind, namespace, name, pod.metadata?.uid);
      return requeueAfter(this.opts.deletionPollMs);
    }

    const runningSince = listenerRunningSince(pod);
    if (runningSince === undefined) {
      this.deps.metrics?.set(key, false);
      return done;
    }
    this.deps.metrics?.set(key, true);
    const stableForMs = this.now() - runningSince;
    const change: AutoscalingListenerStatus = {
      conditions: setCondition(listener.status?.conditions, {
        type: ScaleSetConditionTypes.listenerRunning,
        status: 'True',
        reason: ScaleSetReasons.listenerRunning,
        message: 'The listener pod is running',
      }),
    };
    if ((status.restarts ?? 0) > 0 && stableForMs >= this.opts.stableAfterMs) change.restarts = 0;
    await this.patchStatus(listener, change);
    return (status.restarts ?? 0) > 0 && change.restarts === undefined
      ? requeueAfter(this.opts.stableAfterMs - stableForMs)
      : done;
  }

  /**
   * Creates the object, or replaces it when its integrity hash differs from the desired one (the
   * hash covers only what this controller sets, so fields others add do not cause churn).
   */
  private async apply<T extends KubeObject>(
    kind: ResourceKind,
    desired: T,
    log: Logger,
    read?: T,
  ): Promise<T> {
    const namespace = desired.metadata?.namespace ?? '';
    const name = desired.metadata?.name ?? '';
    const current = read ?? (await this.readIgnoringNotFound<T>(kind, namespace, name));
    if (!current) {
      const created = await this.deps.client.create<T>(kind, desired);
      log.info('Created a listener resource', { kind: kind.kind, object: `${namespace}/${name}` });
      return created;
    }
    if (hashOf(current) === hashOf(desired)) return current;
    const replaced = await this.deps.client.replace<T>(kind, {
      ...desired,
      metadata: { ...desired.metadata, resourceVersion: current.metadata?.resourceVersion },
    });
    log.info('Updated a listener resource whose hash changed', {
      kind: kind.kind,
      object: `${namespace}/${name}`,
    });
    return replaced;
  }

  private async deleteIgnoringNotFound(
    kind: ResourceKind,
    namespace: string,
    name: string,
    uid?: string,
  ): Promise<boolean> {
    try {
      await this.deps.client.delete(kind, namespace, name, uid ? { preconditions: { uid } } : {});
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  /** Deletion: the pod first (it deletes its message session on SIGTERM), then what it used, then the finalizer. */
  private async finalize(listener: AutoscalingListener, key: string, log: Logger): Promise<Result> {
    if (!hasFinalizer(listener, AUTOSCALING_LISTENER_FINALIZER)) return done;
    const namespace = listener.metadata?.namespace ?? '';
    const name = listener.metadata?.name ?? '';
    const setNamespace = listener.spec.autoscalingRunnerSetNamespace ?? '';
    this.deps.metrics?.set(key, false);
    let podGone = true;
    try {
      const pod = await this.deps.client.get<V1Pod>(PodKind, namespace, name);
      podGone = false;
      if (!pod.metadata?.deletionTimestamp) await this.deleteIgnoringNotFound(PodKind, namespace, name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    if (!podGone) {
      log.info('Waiting for the listener pod to go');
      return requeueAfter(this.opts.deletionPollMs);
    }
    await this.deleteIgnoringNotFound(SecretKind, namespace, listenerConfigSecretName(name));
    await this.deleteIgnoringNotFound(RoleBindingKind, setNamespace, name);
    await this.deleteIgnoringNotFound(RoleKind, setNamespace, name);
    await this.deleteIgnoringNotFound(ServiceAccountKind, namespace, name);
    try {
      await this.deps.client.mergePatch(
        AutoscalingListenerKind,
        namespace,
        name,
        finalizersPatch(listener, withoutFinalizer(listener, AUTOSCALING_LISTENER_FINALIZER)),
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    this.deps.metrics?.forget(key);
    this.configRefresh.forget(key);
    log.info('Removed the finalizer of a deleted listener');
    return done;
  }

  private async patchStatus(listener: AutoscalingListener, change: AutoscalingListenerStatus): Promise<void> {
    const current = (listener.status ?? {}) as Record<string, unknown>;
    if (!Object.entries(change).some(([k, v]) => !isDeepStrictEqual(current[k], v))) return;
    try {
      const updated = await this.deps.client.mergePatchStatus<AutoscalingListener>(
        AutoscalingListenerKind,
        listener.metadata?.namespace ?? '',
        listener.metadata?.name ?? '',
        { status: change },
      );
      listener.status = updated.status;
    } catch (err) {
      if (!isNotFound(err)) {
        throw new Error(
          `AutoscalingListener ${listener.metadata?.namespace}/${listener.metadata?.name}: status patch failed: ${describeError(err)}`,
          { cause: err },
        );
      }
    }
  }
}
