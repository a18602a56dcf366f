import type { KubeConfig } from '@kubernetes/client-node';
import {
  AutoscalingListener,
  AutoscalingListenerKind,
  EphemeralRunner,
  EphemeralRunnerKind,
  Labels,
} from '@aro/api';
import type { KubeClient } from '@aro/kube';
import { CONTROLLER_NAMESPACE, RUNNER_NAMESPACE, deleteManifests, manifestsLeft } from './charts';
import type { Manifest } from '../integration/charts/helm-chart';
import { podsIn } from './observe';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface DrainOptions {
  kube: KubeClient;
  kubeConfig: KubeConfig;
  /** The scale-set chart's release: the scale set's name. */
  release: string;
  /** The scale-set chart's objects as applied. */
  scaleSet: Manifest[];
  /** Called once a second while it waits, for the progress view. */
  tick: () => Promise<void>;
  event: (line: string) => void;
}

/**
 * `helm uninstall` of the scale set: its objects deleted, then a wait until the controller has
 * released its runners, their pods and the listener, and the chart's protected objects have gone.
 * Returns the chart objects still there: once the runners, pods and listener are gone, an object that
 * stays 20 s is stuck (a finalizer nobody will remove), not slow, so it is counted rather than waited for.
 */
export async function drainScaleSet(o: DrainOptions): Promise<string[]> {
  o.event(`workload over; uninstalling the scale set (release ${o.release})`);
  await deleteManifests(o.kubeConfig, o.scaleSet);
  const drainUntil = Date.now() + 90_000;
  let chartLeft: string[] = [];
  let settledAt = 0;
  while (Date.now() < drainUntil) {
    await o.tick();
    chartLeft = await manifestsLeft(o.kubeConfig, o.scaleSet);
    // The scale set's own runners, pods and listener (by the label the controller propagates): what a
    // person applied with --keep (examples/manifests) is theirs and is not waited for.
    const own = { labelSelector: `${Labels.scaleSetName}=${o.release}` };
    const listeners = await o.kube.list<AutoscalingListener>(AutoscalingListenerKind, {
      namespace: CONTROLLER_NAMESPACE,
      ...own,
    });
    const runners = await o.kube.list<EphemeralRunner>(EphemeralRunnerKind, {
      namespace: RUNNER_NAMESPACE,
      ...own,
    });
    const settled =
      runners.length === 0 &&
      (await podsIn(o.kube, own.labelSelector)).length === 0 &&
      listeners.length === 0;
    if (settled && chartLeft.length === 0) break;
    settledAt = settled ? settledAt || Date.now() : 0;
    if (settledAt && Date.now() - settledAt > 20_000) {
      o.event(`still there 20 s after the runners went: ${chartLeft.join(', ')}`);
      break;
    }
    await sleep(1_000);
  }
  return chartLeft;
}
