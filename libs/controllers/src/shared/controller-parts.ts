import { type IssuedDeletions, type KubeApi, ObjectMemory, type Reader } from '@aro/kube';
import type { Logger } from '@aro/observability';
import type { SecretResolver } from '@aro/secrets';
import type { EventRecorder } from '../events/event-recorder';

/** What the three scale-set reconcilers depend on; each adds its own metrics. */
export interface ScaleSetReconcilerDeps {
  /** The API port (a fake in unit specs), not the HTTP client: the reconcilers only read and write. */
  client: KubeApi;
  cache: Reader;
  resolver: SecretResolver;
  events?: EventRecorder;
  logger: Logger;
  now?: () => number;
  /** Deletions already issued, by this controller or another of the app. */
  deletions?: IssuedDeletions;
}

/**
 * What the parts of a scale-set reconciler are built on: the ports they read and write through, the
 * clock, and the reconciler's one per-object memory. The metrics' series of an object go when the
 * memory forgets it.
 */
export interface ScaleSetPorts<Metrics = { forget(key: string): void }> {
  client: KubeApi;
  cache: Reader;
  resolver: SecretResolver;
  events?: Pick<EventRecorder, 'record'>;
  metrics?: Metrics;
  now: () => number;
  /** Everything remembered per object; forgotten once, when the object is gone. */
  memory: ObjectMemory;
}

export function scaleSetPorts<Metrics extends { forget(key: string): void }>(
  deps: ScaleSetReconcilerDeps & { metrics?: Metrics },
): ScaleSetPorts<Metrics> {
  const memory = new ObjectMemory();
  const { metrics } = deps;
  if (metrics) memory.onForget((key) => metrics.forget(key));
  const { client, cache, resolver, events } = deps;
  return { client, cache, resolver, events, metrics, now: deps.now ?? Date.now, memory };
}
