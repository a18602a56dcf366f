import { Injectable, Module } from '@nestjs/common';
import type { V1Pod } from '@kubernetes/client-node';
import type { EphemeralRunner, EphemeralRunnerPhase } from '@aro/api';
import { RunnerExtension, RunnerLifecycleObserver, RunnerPodMutator } from '@aro/controllers';
import { getOrCreateCounter, metricsRegistry } from '@aro/observability';

/** The label that says which team a runner's cost is charged to, copied from its EphemeralRunner. */
export const COST_CENTER_LABEL = 'example.com/cost-center';

/**
 * An example of extending ARO as a platform team would, as one Nest module to import:
 *
 * - a pod mutator that copies the EphemeralRunner's cost-center label to its pod, and gives every
 *   runner pod a default priority class, so the scheduler can preempt runners before services;
 * - a lifecycle observer counting phase transitions per cost center.
 *
 * Both are plain providers marked @RunnerExtension(); the controller app discovers them.
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
    if (pod.spec && !pod.spec.priorityClassName) pod.spec.priorityClassName = 'runner-default';
  }
}

@RunnerExtension()
@Injectable()
export class RunnerTransitionsByCostCenter implements RunnerLifecycleObserver {
  readonly name = 'runner-transitions-by-cost-center';
  private readonly transitions = getOrCreateCounter(metricsRegistry(), {
    name: 'example_runner_transitions_total',
    help: 'Runner phase transitions, by cost center and the phase entered.',
    labelNames: ['cost_center', 'phase'],
  });

  onPhaseChange(
    runner: EphemeralRunner,
    _from: EphemeralRunnerPhase | undefined,
    to: EphemeralRunnerPhase | undefined,
  ): void {
    this.transitions.inc({
      cost_center: runner.metadata?.labels?.[COST_CENTER_LABEL] ?? 'none',
      phase: to ?? '',
    });
  }
}

@Module({ providers: [RunnerPodDefaults, RunnerTransitionsByCostCenter] })
export class RunnerPodDefaultsModule {}
