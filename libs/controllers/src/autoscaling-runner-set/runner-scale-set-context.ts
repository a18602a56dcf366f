import {
  ExponentialBackoffRateLimiter,
  type KeyedStore,
  type KubeApi,
  ObjectMemory,
  type Pass,
  type Reader,
} from '@aro/kube';
import type { AutoscalingRunnerSet } from '@aro/api';
import type { SecretResolver } from '@aro/secrets';
import type { EventRecorder } from '../events/event-recorder';

import type { ScaleSetReconcilerDeps } from '../shared/controller-parts';
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

export type AutoscalingRunnerSetReconcilerDeps = ScaleSetReconcilerDeps;

/** One pass of one AutoscalingRunnerSet. */
export type ScaleSetPass = Pass<AutoscalingRunnerSet>;

export interface ScaleSetContext {
  client: KubeApi;
  cache: Reader;
  resolver: SecretResolver;
  events?: Pick<EventRecorder, 'record'>;
  opts: Required<AutoscalingRunnerSetReconcilerOptions>;
  now: () => number;
  /** Everything remembered per set; forgotten once, when the set is gone. */
  memory: ObjectMemory;
  /** Per set: failures in a row to reach the service, and the wait before the next attempt. */
  failures: ExponentialBackoffRateLimiter;
  /** Per set: when the service last said the scale set exists. */
  lastChecked: KeyedStore<number>;
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
  const memory = new ObjectMemory();
  return {
    client: deps.client,
    cache: deps.cache,
    resolver: deps.resolver,
    events: deps.events,
    opts,
    now: deps.now ?? Date.now,
    memory,
    failures: new ExponentialBackoffRateLimiter(
      opts.errorBackoffBaseMs,
      opts.errorBackoffMaxMs,
      memory.slot('service failures'),
    ),
    lastChecked: memory.slot('scale set checked'),
  };
}
