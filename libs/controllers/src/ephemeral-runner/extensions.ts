import type { V1Pod } from '@kubernetes/client-node';
import { DiscoveryService } from '@nestjs/core';
import type { EphemeralRunner, EphemeralRunnerPhase } from '@aro/api';

/**
 * Changes a runner pod before it is created: a platform team's labels, a node selector per tenant, a
 * mounted CA bundle. A Nest provider marked with @RunnerExtension(); applied in the order the
 * controller app discovers them. A mutator that throws fails the reconcile, which is retried with backoff, so
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
  onPhaseChange?(
    runner: EphemeralRunner,
    from: EphemeralRunnerPhase | undefined,
    to: EphemeralRunnerPhase | undefined,
  ): void;
}

/**
 * Marks a Nest provider as an extension of the EphemeralRunner controller. The controller app finds
 * every provider so marked in the modules it imports, and uses it as a RunnerPodMutator when it has
 * `mutate`, as a RunnerLifecycleObserver when it has `onPhaseChange`, or both. A platform team adds
 * behaviour by importing one more module, with no fork and no registry to edit.
 */
export const RunnerExtension = DiscoveryService.createDecorator<void>();

export function isRunnerPodMutator(value: unknown): value is RunnerPodMutator {
  return typeof (value as RunnerPodMutator | undefined)?.mutate === 'function';
}

export function isRunnerLifecycleObserver(value: unknown): value is RunnerLifecycleObserver {
  return typeof (value as RunnerLifecycleObserver | undefined)?.onPhaseChange === 'function';
}
