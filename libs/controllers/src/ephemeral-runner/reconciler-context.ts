import { type EphemeralRunner, EphemeralRunnerKind } from '@aro/api';
import { IssuedDeletions, type KubeApi, ObjectMemory, type Pass, type Reader } from '@aro/kube';
import type { Logger } from '@aro/observability';
import type { EventRecorder } from '../events/event-recorder';
import type { RunnerLifecycleObserver, RunnerPodMutator } from './extensions';
import { KnownJitSecrets } from './known-jit-secrets';
import type { EphemeralRunnerPhaseMetrics } from './phase-metrics';
import { SlowRetries } from './slow-retry';
import { DEFAULT_FAILURE_BACKOFF_BASE_MS, DEFAULT_MAX_FAILURES } from './failure-backoff';
import type { ActionsClientProvider, UnregistrationQueue } from '../registrations/unregistration-queue';

/*
 * What the parts of the EphemeralRunner reconciler share: its dependencies, its settings and small
 * helpers. Each part (dispatch, finalization, JIT secret, runner pod, status writer, cleanup) is a
 * class of its own file that gets this context.
 */

/** How long a runner being deleted while its pod executes a job waits before the service is asked again. */
export const BUSY_RUNNER_REQUEUE_MS = 30_000;
/** A pod refused for quota is retried this often, and the runner recreated once it is this old. */
export const QUOTA_RETRY_MS = 30_000;
export const QUOTA_RECREATE_AFTER_MS = 10 * 60_000;
export const POD_ALREADY_EXISTS_REQUEUE_MS = 5_000;
export const REGISTRATION_RETRY_MS = 500;

export interface EphemeralRunnerReconcilerOptions {
  /**
   * Grace period for deleting a runner pod whose containers have all exited. Zero by default, so the
   * pod leaves the API as the delete is issued instead of sitting in Terminating while the kubelet
   * tears down the sandbox, holding its name, its scheduling slot and its share of any ResourceQuota
   * from the runner waiting to replace it. A negative value leaves the pod's own grace period. Pods
   * with anything still running are always deleted gracefully.
   */
  terminatedPodGracePeriodSeconds?: number;
  /** Pod failures after which the EphemeralRunner is deleted so its set recreates it. */
  maxFailures?: number;
  failureBackoffBaseMs?: number;
  /**
   * How long a runner pod may take to reach Running before the runner is marked Failed with the
   * kubelet's reason (start-watchdog.ts); 10 minutes by default.
   */
  startTimeoutMs?: number;
  /** Busy runners' pods refuse voluntary eviction (eviction-protection.ts); on by default. */
  evictionProtection?: boolean;
  /** Put in the runner's User-Agent. */
  userAgent: string;
}

export interface EphemeralRunnerReconcilerDeps {
  /** Writes, and the uncached reads of secrets (never cached, as upstream; see KnownJitSecrets). */
  client: KubeApi;
  /** The informer cache, for EphemeralRunners and their pods. */
  cache: Reader;
  /** Uncached reads where the cache is not safe evidence; without it those branches refuse to act. */
  apiReader?: Reader;
  actions: ActionsClientProvider;
  unregistrations: Pick<UnregistrationQueue, 'push'>;
  phaseMetrics?: EphemeralRunnerPhaseMetrics;
  events?: Pick<EventRecorder, 'record'>;
  podMutators?: RunnerPodMutator[];
  observers?: RunnerLifecycleObserver[];
  logger: Logger;
  now?: () => number;
  /** Deletions already issued, by this controller or the runners' set's (shared with it in the app). */
  deletions?: IssuedDeletions;
}

/** The dependencies and the settings with their defaults applied. */
export interface RunnerContext {
  deps: EphemeralRunnerReconcilerDeps;
  /** The informer cache and the client, as every finalizing reconciler's context has them. */
  cache: Reader;
  client: KubeApi;
  options: EphemeralRunnerReconcilerOptions;
  now: () => number;
  gracePeriodSeconds: number;
  maxFailures: number;
  backoffBaseMs: number;
  userAgent: string;
  /** Everything remembered per runner (the parts' slots); forgotten once, when the runner is gone. */
  memory: ObjectMemory;
  /** Per-runner spacing of the retries of failures a retry cannot fix soon. */
  slowRetries: SlowRetries;
  /** What this controller knows of each runner's jitconfig secret without reading it again. */
  jitSecrets: KnownJitSecrets;
  deletions: IssuedDeletions;
}

/** One pass of one EphemeralRunner: the runner as this pass sees it, its key, signal and logger. */
export type RunnerPass = Pass<EphemeralRunner>;

/** The context of one reconciler: its dependencies, its settings with their defaults, its memory. */
export function runnerContext(
  deps: EphemeralRunnerReconcilerDeps,
  options: EphemeralRunnerReconcilerOptions,
): RunnerContext {
  const now = deps.now ?? Date.now;
  const memory = new ObjectMemory();
  // As upstream's reconciler defaults it to the manager's API reader: without one every deletion of a
  // registered runner would fail.
  const withReader = { ...deps, apiReader: deps.apiReader ?? deps.client };
  return {
    deps: withReader,
    cache: deps.cache,
    client: deps.client,
    options,
    now,
    gracePeriodSeconds: options.terminatedPodGracePeriodSeconds ?? 0,
    maxFailures: options.maxFailures ?? DEFAULT_MAX_FAILURES,
    backoffBaseMs: options.failureBackoffBaseMs ?? DEFAULT_FAILURE_BACKOFF_BASE_MS,
    userAgent: options.userAgent,
    memory,
    slowRetries: new SlowRetries(memory.slot('slow retries')),
    jitSecrets: new KnownJitSecrets(memory),
    deletions: deps.deletions ?? new IssuedDeletions(30_000, now),
  };
}

/** Deletes the runner once: a deletion its set already issued is not asked again (NotFound is done). */
export function deleteRunnerOnce(ctx: RunnerContext, runner: EphemeralRunner): Promise<boolean> {
  return ctx.deletions.delete(ctx.deps.client, EphemeralRunnerKind, runner);
}

export function runnerKey(runner: EphemeralRunner): string {
  return `${runner.metadata?.namespace}/${runner.metadata?.name}`;
}
