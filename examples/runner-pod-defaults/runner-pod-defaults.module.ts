import { Injectable, Module } from '@nestjs/common';
import type { V1Pod } from '@kubernetes/client-node';
import type { EphemeralRunner } from '@aro/api';
import { RunnerExtension, RunnerPodMutator } from '@aro/controllers';

/** The label that says which team a runner's cost is charged to, copied from its EphemeralRunner. */
export const COST_CENTER_LABEL = 'example.com/cost-center';
/** The priority class every runner pod gets unless its template names one. */
export const RUNNER_PRIORITY_CLASS = 'runner-default';

/**
 * A runner-pod mutator, as a platform team would write one: copies the EphemeralRunner's cost-center
 * label to its pod, and gives every runner pod a default priority class so the scheduler preempts
 * runners before services. A plain provider marked @RunnerExtension(); the EphemeralRunner module
 * finds it and applies it to every pod before creating it.
 */
@RunnerExtension()
@Injectable()
export class RunnerPodDefaults implements RunnerPodMutator {
  readonly name = 'runner-pod-defaults';

  mutate(pod: V1Pod, runner: EphemeralRunner): void {
    const costCenter = runner.metadata?.labels?.[COST_CENTER_LABEL];
    if (costCenter)
      pod.metadata = {
        ...pod.metadata,
        labels: { ...pod.metadata?.labels, [COST_CENTER_LABEL]: costCenter },
      };
    if (pod.spec && !pod.spec.priorityClassName) pod.spec.priorityClassName = RUNNER_PRIORITY_CLASS;
  }
}

/** Load with `ARO_EXTENSIONS=./examples/runner-pod-defaults/runner-pod-defaults.module`. */
@Module({ providers: [RunnerPodDefaults] })
export class RunnerPodDefaultsModule {}
