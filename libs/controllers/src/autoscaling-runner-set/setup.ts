import {
  AutoscalingListener,
  AutoscalingListenerKind,
  AutoscalingRunnerSetKind,
  EphemeralRunnerSetKind,
} from '@aro/api';
import { ControllerBuilder, resourceVersionChangedPredicate } from '@aro/kube';
import { ScaleSetControllerParts, eventRecorderFor } from '../ephemeral-runner-set/setup';
import {
  AutoscalingRunnerSetReconciler,
  type AutoscalingRunnerSetReconcilerOptions,
} from './autoscaling-runner-set.reconciler';

export interface AutoscalingRunnerSetControllerConfig extends AutoscalingRunnerSetReconcilerOptions {
  maxConcurrentReconciles?: number;
  events?: 'all' | 'failures' | 'none';
}

/**
 * Registers the AutoscalingRunnerSet controller: it reconciles AutoscalingRunnerSets, is woken by the
 * EphemeralRunnerSets they own and by their listeners (which live in the controller namespace, so
 * they are mapped back by their spec, not by an owner reference). It runs only on the leader.
 */
export function setupAutoscalingRunnerSetController(
  parts: ScaleSetControllerParts,
  config: AutoscalingRunnerSetControllerConfig,
): AutoscalingRunnerSetReconciler {
  const reconciler = new AutoscalingRunnerSetReconciler(
    {
      client: parts.client,
      cache: parts.cache,
      resolver: parts.resolver,
      events: eventRecorderFor(parts, config.events),
      logger: parts.logger,
      now: parts.now,
    },
    config,
  );
  new ControllerBuilder(parts.manager, 'autoscalingrunnerset')
    .for(AutoscalingRunnerSetKind)
    .owns(EphemeralRunnerSetKind)
    .watches<AutoscalingListener>(AutoscalingListenerKind, (listener) =>
      listener.spec?.autoscalingRunnerSetName
        ? [
            {
              namespace: listener.spec.autoscalingRunnerSetNamespace ?? '',
              name: listener.spec.autoscalingRunnerSetName,
            },
          ]
        : [],
    )
    .withEventFilter(resourceVersionChangedPredicate)
    .withOptions({ maxConcurrentReconciles: config.maxConcurrentReconciles ?? 1 })
    .complete(reconciler);
  return reconciler;
}
