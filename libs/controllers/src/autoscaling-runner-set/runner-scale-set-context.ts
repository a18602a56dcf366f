import { ExponentialBackoffRateLimiter, type KeyedStore, type Pass } from '@aro/kube';
import type { AutoscalingRunnerSet } from '@aro/api';
import type { CanaryMetrics } from './canary/canary-metrics';

import { type ScaleSetPorts, type ScaleSetReconcilerDeps, scaleSetPorts } from '../shared/controller-parts';
/*
 * What the parts of the AutoscalingRunnerSet reconciler share: its dependencies, its settings with
 * their defaults, and per set the failures in a row (the backoff) and when the service was last
 * asked whether the scale set still exists. Each part (the scale set on the service, the runner set,
 * the listener, status, deletion) is a class of its own file that gets this context.
 */

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

/**
 * The runner side's record of the scale sets it registered runners on (the orphan sweep's ledger).
 * A scale set deleted from the service leaves it here, or the sweep would go on auditing a scale set
 * that no longer exists with credentials the uninstall took away.
 */
export interface RegisteredScaleSets {
  forget(namespace: string, runnerScaleSetId: number, signal?: AbortSignal): Promise<void>;
}

export interface AutoscalingRunnerSetReconcilerDeps extends ScaleSetReconcilerDeps {
  /** Absent where no runner controller keeps such a record (unit specs). */
  registeredScaleSets?: RegisteredScaleSets;
  /** On the app's registry; absent: the default registry. */
  metrics?: CanaryMetrics;
}

/** One pass of one AutoscalingRunnerSet. */
export type ScaleSetPass = Pass<AutoscalingRunnerSet>;

export interface ScaleSetContext extends ScaleSetPorts {
  opts: Required<AutoscalingRunnerSetReconcilerOptions>;
  /** Per set: failures in a row to reach the service, and the wait before the next attempt. */
  failures: ExponentialBackoffRateLimiter;
  /** Per set: when the service last said the scale set exists. */
  lastChecked: KeyedStore<number>;
  registeredScaleSets?: RegisteredScaleSets;
  canaryMetrics?: CanaryMetrics;
}

export function scaleSetContext(
  deps: AutoscalingRunnerSetReconcilerDeps,
  options: AutoscalingRunnerSetReconcilerOptions,
): ScaleSetContext {
  const opts: Required<AutoscalingRunnerSetReconcilerOptions> = {
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
  const ports = scaleSetPorts(deps);
  const failures = ports.memory.slot<number>('service failures');
  return {
    ...ports,
    opts,
    failures: new ExponentialBackoffRateLimiter(opts.errorBackoffBaseMs, opts.errorBackoffMaxMs, failures),
    lastChecked: ports.memory.slot('scale set checked'),
    registeredScaleSets: deps.registeredScaleSets,
    canaryMetrics: deps.metrics,
  };
}
