import type { ResourceKind } from '@aro/api';
import type { KubeObject } from '../client';
import type { Manager } from '../manager/manager';
import { Controller, type ControllerOptions, type EventMapper } from './controller';
import { enqueueControllingOwner, enqueueMapped, enqueueObject } from './handlers';
import type { Predicate } from './predicates';
import type { Reconciler, Request } from './types';

interface PendingSource {
  kind: ResourceKind;
  /** Unset for owns(): the owner kind is only known once for() has run, which may come later in the chain. */
  map?: EventMapper<KubeObject>;
  predicates: Predicate<KubeObject>[];
}

/**
 * Declares what a controller reconciles and which events wake it, then registers it with the manager:
 *
 *   new ControllerBuilder(manager, 'ephemeralrunner')
 *     .for(EphemeralRunnerKind, ephemeralRunnerPredicate)
 *     .owns(PodKind, ownedPodPredicate)
 *     .withEventFilter(resourceVersionChangedPredicate)
 *     .withOptions({ maxConcurrentReconciles: 4 })
 *     .complete(reconciler);
 *
 * Call `complete` before the manager starts (in a Nest module's onModuleInit), so that the informers it
 * asks for start with the cache.
 */
export class ControllerBuilder {
  private forKind: ResourceKind | undefined;
  private readonly sources: PendingSource[] = [];
  private readonly globalPredicates: Predicate<KubeObject>[] = [];
  private options: ControllerOptions = {};

  constructor(
    private readonly manager: Manager,
    private readonly name: string,
  ) {}

  /** The kind reconciled: each of its events enqueues the object itself. */
  for<T extends KubeObject>(kind: ResourceKind, ...predicates: Predicate<T>[]): this {
    if (this.forKind !== undefined) {
      throw new Error(
        `controller ${this.name}: for() was already called with ${this.forKind.kind}; call it once`,
      );
    }
    this.forKind = kind;
    this.sources.unshift({ kind, map: enqueueObject(), predicates: predicates as Predicate<KubeObject>[] });
    return this;
  }

  /** A kind the reconciled kind creates: its events enqueue the controlling owner. */
  owns<T extends KubeObject>(kind: ResourceKind, ...predicates: Predicate<T>[]): this {
    this.sources.push({ kind, predicates: predicates as Predicate<KubeObject>[] });
    return this;
  }

  /** Any other kind: `map` says which requests an object's event triggers. */
  watches<T extends KubeObject>(
    kind: ResourceKind,
    map: (obj: T) => Request[],
    ...predicates: Predicate<T>[]
  ): this {
    this.sources.push({
      kind,
      map: enqueueMapped(map) as EventMapper<KubeObject>,
      predicates: predicates as Predicate<KubeObject>[],
    });
    return this;
  }

  /** Predicates applied to the events of every watched kind. */
  withEventFilter<T extends KubeObject>(...predicates: Predicate<T>[]): this {
    this.globalPredicates.push(...(predicates as Predicate<KubeObject>[]));
    return this;
  }

  withOptions(options: ControllerOptions): this {
    this.options = { ...this.options, ...options };
    return this;
  }

  /** Builds the controller, wires its watches to the manager's informers and adds it to the manager. */
  complete(reconciler: Reconciler): Controller {
    const forKind = this.forKind;
    if (forKind === undefined)
      throw new Error(`controller ${this.name}: for() must name the kind it reconciles`);
    const controller = new Controller(
      this.name,
      reconciler,
      { logger: this.manager.logger, registry: this.manager.registry, clock: this.manager.clock },
      this.options,
    );
    for (const source of this.sources) {
      const map = source.map ?? enqueueControllingOwner(forKind);
      controller.watch(this.manager.cache.informerFor<KubeObject>(source.kind), map, [
        ...this.globalPredicates,
        ...source.predicates,
      ]);
    }
    this.manager.add(controller);
    return controller;
  }
}
