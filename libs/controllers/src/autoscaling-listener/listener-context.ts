import {
  AutoscalingListener,
  AutoscalingListenerKind,
  AutoscalingListenerStatus,
  ResourceKind,
} from '@aro/api';
import { KubeObject, type Pass, createOrReplace, exponentialBackoffMs, objectKey } from '@aro/kube';
import type { Logger } from '@aro/observability';
import { ListenerConfigRefresh } from './listener-config-refresh';
import type { ListenerControllerMetrics } from './listener-controller-metrics';
import { hashOf } from './listener-resources';
import type { SharedConfigSecretCache } from './shared-config-cache';

import { type ScaleSetPorts, type ScaleSetReconcilerDeps, scaleSetPorts } from '../shared/controller-parts';
import { patchChangedStatus } from '../shared/changed-status';
/*
 * What the parts of the AutoscalingListener reconciler share: its dependencies, its settings with
 * their defaults, when each listener's config is due to be built again, and the small writes every
 * part makes (create-or-replace by integrity hash, delete, status patch). The parts (config, pod,
 * deletion) are classes of their own files that get this context.
 */

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
  /**
   * `pod` (default, upstream's layout): a listener pod per scale set. `shared`: no pod; the config goes
   * into `sharedConfigSecretName` and the set's Role is bound to `sharedServiceAccountName`, the
   * account of the shared listener Deployment (both in the listeners' namespace, named by the chart).
   */
  listenerMode?: 'pod' | 'shared';
  sharedServiceAccountName?: string;
  sharedConfigSecretName?: string;
  /** Shared mode: how often a listener's status is read again from its EphemeralRunnerSet's annotation. */
  sharedStatusIntervalMs?: number;
  /**
   * Shared mode, deletion: how long a listener's Role is kept for the replica serving it to close the
   * set's session (it reads its configs every 10 s by default); past this the deletion goes on anyway.
   */
  sharedReleaseTimeoutMs?: number;
}

export interface AutoscalingListenerReconcilerDeps extends ScaleSetReconcilerDeps {
  metrics?: ListenerControllerMetrics;
  /** Shared mode: the watched configs Secret (see SharedConfigSecretCache); read live without it. */
  sharedConfigCache?: Pick<SharedConfigSecretCache, 'read'>;
}

/** One pass of one listener. */
export type ListenerPass = Pass<AutoscalingListener>;

export interface ListenerContext extends ScaleSetPorts<ListenerControllerMetrics> {
  opts: Required<AutoscalingListenerReconcilerOptions>;
  configRefresh: ListenerConfigRefresh;
  sharedConfigCache?: Pick<SharedConfigSecretCache, 'read'>;
}

export function listenerContext(
  deps: AutoscalingListenerReconcilerDeps,
  options: AutoscalingListenerReconcilerOptions,
): ListenerContext {
  const ports = scaleSetPorts(deps);
  const opts: Required<AutoscalingListenerReconcilerOptions> = {
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
    listenerMode: options.listenerMode ?? 'pod',
    sharedServiceAccountName: options.sharedServiceAccountName ?? '',
    sharedConfigSecretName: options.sharedConfigSecretName ?? '',
    sharedStatusIntervalMs: options.sharedStatusIntervalMs ?? 10_000,
    sharedReleaseTimeoutMs: options.sharedReleaseTimeoutMs ?? 60_000,
  };
  if (opts.listenerMode === 'shared' && (!opts.sharedServiceAccountName || !opts.sharedConfigSecretName)) {
    throw new Error(
      'the shared listener mode needs the shared listener’s ServiceAccount and config Secret names',
    );
  }
  const { now, memory } = ports;
  const refresh = new ListenerConfigRefresh(
    opts.credentialRefreshIntervalMs,
    now,
    memory.slot('config builds'),
  );
  return { ...ports, opts, configRefresh: refresh, sharedConfigCache: deps.sharedConfigCache };
}

export function restartBackoffMs(ctx: Pick<ListenerContext, 'opts'>, restarts: number): number {
  return exponentialBackoffMs(
    Math.max(1, restarts),
    ctx.opts.restartBackoffBaseMs,
    ctx.opts.restartBackoffMaxMs,
  );
}

/**
 * Creates the object, or replaces it when its integrity hash differs from the desired one (the
 * hash covers only what this controller sets, so fields others add do not cause churn).
 */
export async function applyListenerResource<T extends KubeObject>(
  ctx: Pick<ListenerContext, 'client'>,
  kind: ResourceKind,
  desired: T,
  log: Logger,
  read?: T,
): Promise<T> {
  const { object, operation } = await createOrReplace(ctx.client, kind, desired, {
    upToDate: (current) => hashOf(current) === hashOf(desired),
    current: read,
  });
  const fields = { kind: kind.kind, object: objectKey(desired) };
  if (operation === 'created') log.info('Created a listener resource', fields);
  if (operation === 'replaced') log.info('Updated a listener resource whose hash changed', fields);
  return object;
}

export function patchListenerStatus(
  ctx: Pick<ListenerContext, 'client'>,
  listener: AutoscalingListener,
  change: AutoscalingListenerStatus,
): Promise<void> {
  return patchChangedStatus(ctx.client, AutoscalingListenerKind, listener, change);
}
