import type { V1Pod } from '@kubernetes/client-node';
import type { EphemeralRunner, EphemeralRunnerPhase } from '@aro/api';

/**
 * Changes a runner pod before it is created: a platform team's labels, a node selector per tenant, a
 * mounted CA bundle. Registered as a Nest provider under RUNNER_POD_MUTATORS; applied in
 * registration order. A mutator that throws fails the reconcile, which is retried with backoff, so
 * a pod is never created without the changes a team relies on.
 */
export interface RunnerPodMutator {
  readonly name: string;
  mutate(pod: V1Pod, runner: EphemeralRunner): void | Promise<void>;
}

/**
 * Told of every phase a runner moves to, after the status is written. Observers run inline and must
 * be quick; one that throws is logged and ignored, because observation must never change what the
 * controller does.
 */
export interface RunnerLifecycleObserver {
  readonly name: string;
  onPhaseChange?(runner: EphemeralRunner, from: EphemeralRunnerPhase | undefined, to: EphemeralRunnerPhase | undefined): void;
}

/** Nest injection tokens for the extension points; each resolves to an array. */
export const RUNNER_POD_MUTATORS = Symbol('aro.runnerPodMutators');
export const RUNNER_LIFECYCLE_OBSERVERS = Symbol('aro.runnerLifecycleObservers');
