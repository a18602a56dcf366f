import {
  AutoscalingListener,
  AutoscalingListenerKind,
  AutoscalingRunnerSetKind,
  EphemeralRunnerSetKind,
} from '@aro/api';
import { ScaleSetLedger } from '../registrations/scale-set-ledger';
import { CanaryMetrics } from './canary/canary-metrics';
import { type ControllerOptions, defineController } from '../shared/define-controller';
import {
  AutoscalingRunnerSetReconciler,
  type AutoscalingRunnerSetReconcilerOptions,
} from './autoscaling-runner-set.reconciler';

export type AutoscalingRunnerSetControllerConfig = AutoscalingRunnerSetReconcilerOptions;
export type AutoscalingRunnerSetModuleOptions = AutoscalingRunnerSetReconcilerOptions & ControllerOptions;

/** The set a listener belongs to, from its spec (it lives in the controller namespace, unowned). */
function scaleSetOfListener(listener: AutoscalingListener): Array<{ namespace: string; name: string }> {
  const name = listener.spec?.autoscalingRunnerSetName;
  return name ? [{ namespace: listener.spec.autoscalingRunnerSetNamespace ?? '', name }] : [];
}

/**
 * The AutoscalingRunnerSet controller: the scale set on the Actions service, its EphemeralRunnerSet
 * and its listener. Woken by the sets, the EphemeralRunnerSets they own and their listeners (which
 * live in the controller namespace, so they are mapped back by their spec, not by an owner
 * reference). A deleted scale set leaves the ledger of UnregistrationModule. `listenerImage` may be
 * empty: the app starts, and each scale set records ListenerImageMissing instead of getting a listener.
 */
export const autoscalingRunnerSetController = defineController({
  name: 'AutoscalingRunnerSet',
  metrics: (registry) => new CanaryMetrics(registry),
  providers: (lookup) => ({ registeredScaleSets: lookup(ScaleSetLedger) }),
  reconciler: (deps, config: AutoscalingRunnerSetReconcilerOptions) =>
    new AutoscalingRunnerSetReconciler(deps, config),
  watches: (watch) =>
    watch
      .for(AutoscalingRunnerSetKind)
      .owns(EphemeralRunnerSetKind)
      .watches<AutoscalingListener>(AutoscalingListenerKind, scaleSetOfListener),
});
export const AutoscalingRunnerSetModule = autoscalingRunnerSetController.module;
/** Its provider in the app: `app.get(AutoscalingRunnerSetController).reconciler`. */
export const AutoscalingRunnerSetController = autoscalingRunnerSetController.controller;
