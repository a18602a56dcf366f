import { Registry } from 'prom-client';
import {
  ControllerBuilder,
  IssuedDeletions,
  KubeClient,
  Manager,
  type KubeApi,
  ObjectMemory,
  type ProviderLookup,
  type Reader,
  type Reconciler,
  resourceVersionChangedPredicate,
} from '@aro/kube';
import { LOGGER, type Logger, metricsRegistry } from '@aro/observability';
import { SecretResolver } from '@aro/secrets';
import { EventRecorder } from '../events/event-recorder';

/** Which Events a controller records: all, only failures (Warnings), or none. */
export type EventsMode = 'all' | 'failures' | 'none';

/** What every controller is built from; the app's global providers (or a test) give one of each. */
export interface ControllerParts {
  manager: Manager;
  client: KubeClient;
  /** The manager's informer cache. */
  cache: Reader;
  /** Uncached reads; the client itself is the usual choice. */
  apiReader?: Reader;
  /** Credentials, proxy, CA and Actions clients for a scale set's GitHub configuration. */
  resolver: SecretResolver;
  logger: Logger;
  registry?: Registry;
  /** The clock of the time-based branches (tests). */
  now?: () => number;
  /** The app's record of issued deletions, shared so two controllers never delete one object twice. */
  deletions?: IssuedDeletions;
}

/** The parts, out of the app's global providers. */
export function controllerPartsOf(providers: ProviderLookup, now?: () => number): ControllerParts {
  const manager = providers(Manager);
  const client = providers(KubeClient);
  return {
    manager,
    client,
    cache: manager.cache,
    apiReader: client,
    resolver: providers(SecretResolver),
    logger: providers<Logger>(LOGGER),
    registry: providers<Registry>(Registry),
    now,
    deletions: providers(IssuedDeletions),
  };
}

export function eventRecorderFor(
  parts: Pick<ControllerParts, 'client' | 'logger'>,
  mode: EventsMode,
): EventRecorder | undefined {
  return mode === 'none'
    ? undefined
    : new EventRecorder(parts.client, 'aro-controller', parts.logger.child({ component: 'events' }), mode);
}

/** What the three scale-set reconcilers depend on; each adds its own metrics. */
export interface ScaleSetReconcilerDeps {
  /** The API port (a fake in unit specs), not the HTTP client: the reconcilers only read and write. */
  client: KubeApi;
  cache: Reader;
  resolver: SecretResolver;
  events?: EventRecorder;
  logger: Logger;
  now?: () => number;
  /** Deletions already issued, by this controller or another of the app (ControllerParts.deletions). */
  deletions?: IssuedDeletions;
}

/** The deps, and the reconciler's own metrics on the app's registry (or the default one). */
export function scaleSetReconcilerDeps<Metrics>(
  parts: ControllerParts,
  events: EventsMode | undefined,
  metrics: new (registry: Registry) => Metrics,
): ScaleSetReconcilerDeps & { metrics: Metrics };
export function scaleSetReconcilerDeps(
  parts: ControllerParts,
  events: EventsMode | undefined,
): ScaleSetReconcilerDeps;
export function scaleSetReconcilerDeps<Metrics>(
  parts: ControllerParts,
  events: EventsMode | undefined,
  metrics?: new (registry: Registry) => Metrics,
): ScaleSetReconcilerDeps & { metrics?: Metrics } {
  return {
    ...(metrics ? { metrics: new metrics(parts.registry ?? metricsRegistry()) } : {}),
    client: parts.client,
    cache: parts.cache,
    resolver: parts.resolver,
    events: eventRecorderFor(parts, events ?? 'all'),
    logger: parts.logger,
    now: parts.now,
    deletions: parts.deletions,
  };
}

/**
 * Adds `reconciler` to the manager as controller `name`, woken by what `watches` declares (its kind,
 * what it owns, what it maps), and only by changes (a resync of an unchanged object wakes nothing).
 * Call before the manager starts; the controller runs only on the leader.
 */
export function completeController<R extends Reconciler>(
  manager: Manager,
  name: string,
  reconciler: R,
  watches: (builder: ControllerBuilder, reconciler: R) => ControllerBuilder,
  maxConcurrentReconciles: number,
): R {
  watches(new ControllerBuilder(manager, name), reconciler)
    .withEventFilter(resourceVersionChangedPredicate)
    .withOptions({ maxConcurrentReconciles })
    .complete(reconciler);
  return reconciler;
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

/** What every scale-set controller's configuration holds besides its reconciler's options. */
export interface ScaleSetControllerConfig {
  maxConcurrentReconciles?: number;
  events?: EventsMode;
}

/**
 * A scale-set controller as data: its name, its metrics, how its reconciler is built from the ports,
 * and what wakes it. The registration itself (the ports, the event filter, one reconcile at a time
 * unless configured) is written once, here, instead of once per controller.
 */
export interface ScaleSetControllerSpec<R extends Reconciler, C extends ScaleSetControllerConfig, M> {
  name: string;
  metrics: new (registry: Registry) => M;
  reconciler: (deps: ScaleSetReconcilerDeps & { metrics: M }, config: C) => R;
  /** What wakes it; the reconciler is given for predicates that feed its memory from the events. */
  watches: (builder: ControllerBuilder, reconciler: R) => ControllerBuilder;
}

/** The setup function of a scale-set controller described by `spec`: registers it with a manager. */
export function scaleSetControllerSetup<R extends Reconciler, C extends ScaleSetControllerConfig, M>(
  spec: ScaleSetControllerSpec<R, C, M>,
): (parts: ControllerParts, config?: C) => R {
  return (parts, config = {} as C) =>
    completeController(
      parts.manager,
      spec.name,
      spec.reconciler(scaleSetReconcilerDeps(parts, config.events, spec.metrics), config),
      spec.watches,
      config.maxConcurrentReconciles ?? 1,
    );
}
