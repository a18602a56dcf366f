import {
  AutoscalingListener,
  AutoscalingListenerKind,
  AutoscalingRunnerSetKind,
  EphemeralRunnerSetKind,
} from '@aro/api';
import {
  type ControllerParts,
  type EventsMode,
  completeController,
  scaleSetReconcilerDeps,
} from '../shared/controller-parts';
import {
  AutoscalingRunnerSetReconciler,
  type AutoscalingRunnerSetReconcilerOptions,
} from './autoscaling-runner-set.reconciler';
import type { RegisteredScaleSets } from './runner-scale-set-context';
import { CanaryMetrics } from './canary/canary-metrics';

export interface AutoscalingRunnerSetControllerConfig extends AutoscalingRunnerSetReconcilerOptions {
  maxConcurrentReconciles?: number;
  events?: EventsMode;
}

/** The set a listener belongs to, from its spec (it lives in the controller namespace, unowned). */
function scaleSetOfListener(listener: AutoscalingListener): Array<{ namespace: string; name: string }> {
  const name = listener.spec?.autoscalingRunnerSetName;
  return name ? [{ namespace: listener.spec.autoscalingRunnerSetNamespace ?? '', name }] : [];
}

/**
 * Registers the AutoscalingRunnerSet controller: it reconciles AutoscalingRunnerSets, is woken by the
 * EphemeralRunnerSets they own and by their listeners (which live in the controller namespace, so
 * they are mapped back by their spec, not by an owner reference). It runs only on the leader.
 */
export function setupAutoscalingRunnerSetController(
  parts: ControllerParts,
  config: AutoscalingRunnerSetControllerConfig,
  registeredScaleSets?: RegisteredScaleSets,
): AutoscalingRunnerSetReconciler {
  return completeController(
    parts.manager,
    'autoscalingrunnerset',
    new AutoscalingRunnerSetReconciler(
      { ...scaleSetReconcilerDeps(parts, config.events, CanaryMetrics), registeredScaleSets },
      config,
    ),
    (watch) =>
      watch
        .for(AutoscalingRunnerSetKind)
        .owns(EphemeralRunnerSetKind)
        .watches<AutoscalingListener>(AutoscalingListenerKind, scaleSetOfListener),
    config.maxConcurrentReconciles ?? 1,
  );
}
