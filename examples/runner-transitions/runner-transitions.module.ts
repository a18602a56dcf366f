import { Inject, Injectable, Module } from '@nestjs/common';
import { Counter, Registry } from 'prom-client';
import type { EphemeralRunner, EphemeralRunnerPhase } from '@aro/api';
import { RunnerExtension, RunnerLifecycleObserver } from '@aro/controllers';
import { LOGGER, Logger, getOrCreateCounter } from '@aro/observability';

/** The label that says which team a runner's cost is charged to. */
export const COST_CENTER_LABEL = 'example.com/cost-center';

/**
 * A lifecycle observer, as a platform team would write one: counts runner phase transitions per cost
 * center in the app's own metrics registry (served on /metrics beside the controller's), and logs each
 * one through the app's logger. Both are injected: the extension builds nothing of the runtime.
 */
@RunnerExtension()
@Injectable()
export class RunnerTransitionsByCostCenter implements RunnerLifecycleObserver {
  readonly name = 'runner-transitions-by-cost-center';
  private readonly transitions: Counter<'cost_center' | 'phase'>;
  private readonly log: Logger;

  constructor(registry: Registry, @Inject(LOGGER) logger: Logger) {
    this.transitions = getOrCreateCounter(registry, {
      name: 'example_runner_transitions_total',
      help: 'Runner phase transitions, by cost center and the phase entered.',
      labelNames: ['cost_center', 'phase'],
    });
    this.log = logger.child({ component: 'runner-transitions' });
  }

  onPhaseChange(
    runner: EphemeralRunner,
    from: EphemeralRunnerPhase | undefined,
    to: EphemeralRunnerPhase | undefined,
  ): void {
    const costCenter = runner.metadata?.labels?.[COST_CENTER_LABEL] ?? 'none';
    this.transitions.inc({ cost_center: costCenter, phase: to ?? '' });
    this.log.info('Runner phase transition', {
      namespace: runner.metadata?.namespace,
      name: runner.metadata?.name,
      from: from ?? '',
      to: to ?? '',
      costCenter,
    });
  }
}

/** Load with `ARO_EXTENSIONS=./examples/runner-transitions/runner-transitions.module`. */
@Module({ providers: [RunnerTransitionsByCostCenter] })
export class RunnerTransitionsModule {}
