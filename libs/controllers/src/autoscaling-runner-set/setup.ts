import {
  AutoscalingListener,
  AutoscalingListenerKind,
  AutoscalingRunnerSetKind,
  EphemeralRunnerSetKind,
} from '@aro/api';
import { ControllerBuilder, resourceVersionChangedPredicate } from '@aro/kube';
import { type ControllerParts, type EventsMode, scaleSetReconcilerDeps } from '../shared/controller-parts';
import {
  AutoscalingRunnerSetReconciler,
  type AutoscalingRunnerSetReconcilerOptions,
} from './autoscaling-runner-set.reconciler';

export interface AutoscalingRunnerSetControllerConfig extends AutoscalingRunnerSetReconcilerOptions {
  maxConcurrentReconciles?: number;
  events?: EventsMode;
}

/**
 * Registers the AutoscalingRunnerSet controller: it reconciles AutoscalingRunnerSets, is woken by the
 * EphemeralRunnerSets they own and by their listeners (which live in the controller namespace, so
 * they are mapped back by their spec, not by an owner reference). It runs only on the leader.
 */
export function setupAutoscalingRunnerSetController(
  parts: ControllerParts,
  config: AutoscalingRunnerSetControllerConfig,
): AutoscalingRunnerSetReconciler {
  const reconciler = new AutoscalingRunnerSetReconciler(scaleSetReconcilerDeps(parts, config.events), config);
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
