import {
  ConfigurableModuleBuilder,
  type ConfigurableModuleCls,
  Inject,
  Injectable,
  Module,
  type ModuleMetadata,
  type OnModuleInit,
  type Type,
} from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { Registry } from 'prom-client';
import {
  ControllerBuilder,
  IssuedDeletions,
  KubeClient,
  Manager,
  type Reconciler,
  resourceVersionChangedPredicate,
} from '@aro/kube';
import { LOGGER, type Logger } from '@aro/observability';
import { SecretResolver } from '@aro/secrets';
import { EventRecorder } from '../events/event-recorder';
import type { ScaleSetReconcilerDeps } from './controller-parts';

/** Which Events a controller records: all, only failures (Warnings), or none. */
export type EventsMode = 'all' | 'failures' | 'none';

/** A provider of the app, by class or token (the manager, the client, the logger, ...). */
export type ProviderLookup = <T>(token: Type<T> | string | symbol) => T;

/**
 * What every controller's options hold besides its reconciler's own: how many keys it reconciles at
 * once, which Events it records, and the clock of its time-based branches (tests).
 */
export interface ControllerOptions {
  maxConcurrentReconciles?: number;
  events?: EventsMode;
  now?: () => number;
}

/** What every reconciler may be built from: the app's ports, its clock and its metrics. */
export interface ControllerDeps<Metrics> extends ScaleSetReconcilerDeps {
  /** The client itself (the reconcilers type it as the KubeApi port; an informer of their own needs it whole). */
  client: KubeClient;
  /** The Kubernetes client itself: uncached reads where the cache is not safe evidence. */
  apiReader: KubeClient;
  /** The app's Prometheus registry, which `/metrics` serves. */
  registry: Registry;
  metrics: Metrics;
  manager: Manager;
}

/**
 * One controller, as data. The rest (the Nest module and its `forRoot` options, building the
 * reconciler when every provider of the app exists and before the manager starts, the event filter
 * that lets a resync of an unchanged object wake nothing, leader-only running) is the same for every
 * controller and lives once, in {@link defineController}.
 */
export interface ControllerDefinition<Config extends object, R extends Reconciler, Metrics, Extra> {
  /** The kind, as `EphemeralRunnerSet`: names the module and its provider; lowercased, the controller. */
  name: string;
  /** Its metrics on the app's registry; a controller without its own gets `undefined`. */
  metrics?: (registry: Registry, logger: Logger) => Metrics;
  /** The providers it needs beyond the common ports (a queue, a ledger, extensions), from the app. */
  providers?: (lookup: ProviderLookup, options: Config & ControllerOptions) => Extra;
  /** Modules `providers` needs beside the global ones. */
  imports?: ModuleMetadata['imports'];
  reconciler: (deps: ControllerDeps<Metrics> & Extra, config: Config) => R;
  /** What wakes it; the reconciler is given for predicates that feed its memory from the events. */
  watches: (builder: ControllerBuilder, reconciler: R) => ControllerBuilder;
  /** Defaults of the common options where the controller's differ from one worker and every Event. */
  defaults?: { maxConcurrentReconciles?: number; events?: EventsMode };
}

/** What a controller module exports: its reconciler, once the module has initialised. */
export interface ControllerHandle<R> {
  readonly reconciler: R | undefined;
}

export interface DefinedController<Config extends object, R> {
  /** The Nest module; the app imports `module.forRoot(options)`. */
  module: ConfigurableModuleCls<Config & ControllerOptions, 'forRoot'>;
  /** The provider that installs the controller at module init; a test gets it to reach the reconciler. */
  controller: Type<ControllerHandle<R>>;
  /** The token of the module's options. */
  optionsToken: string | symbol;
}

export function eventRecorderFor(
  parts: { client: KubeClient; logger: Logger },
  mode: EventsMode,
): EventRecorder | undefined {
  return mode === 'none'
    ? undefined
    : new EventRecorder(parts.client, 'aro-controller', parts.logger.child({ component: 'events' }), mode);
}

/** Builds the controller `definition` describes and adds it to the app's manager. */
function install<Config extends object, R extends Reconciler, Metrics, Extra>(
  definition: ControllerDefinition<Config, R, Metrics, Extra>,
  options: Config & ControllerOptions,
  lookup: ProviderLookup,
): R {
  const { maxConcurrentReconciles, events, now, ...config } = options;
  const manager = lookup(Manager);
  const client = lookup(KubeClient);
  const logger = lookup<Logger>(LOGGER);
  const registry = lookup<Registry>(Registry);
  const deps: ControllerDeps<Metrics> = {
    manager,
    client,
    cache: manager.cache,
    apiReader: client,
    resolver: lookup(SecretResolver),
    logger,
    registry,
    now,
    deletions: lookup(IssuedDeletions),
    events: eventRecorderFor({ client, logger }, events ?? definition.defaults?.events ?? 'all'),
    metrics: definition.metrics?.(registry, logger) as Metrics,
  };
  const extra = definition.providers?.(lookup, options) ?? ({} as Extra);
  const reconciler = definition.reconciler({ ...deps, ...extra }, config as unknown as Config);
  definition
    .watches(new ControllerBuilder(manager, definition.name.toLowerCase()), reconciler)
    .withEventFilter(resourceVersionChangedPredicate)
    .withOptions({
      maxConcurrentReconciles: maxConcurrentReconciles ?? definition.defaults?.maxConcurrentReconciles ?? 1,
    })
    .complete(reconciler);
  return reconciler;
}

/**
 * The one way a controller is defined: its name, metrics, extra providers, reconciler and watches
 * make its Nest module. The controller is built in the module's onModuleInit, when every provider of
 * the app exists and the manager has not started, so its informers start with the cache.
 */
export function defineController<
  Config extends object,
  R extends Reconciler,
  Metrics = undefined,
  Extra = object,
>(definition: ControllerDefinition<Config, R, Metrics, Extra>): DefinedController<Config, R> {
  type Options = Config & ControllerOptions;
  const { ConfigurableModuleClass, MODULE_OPTIONS_TOKEN } = new ConfigurableModuleBuilder<Options>({
    moduleName: definition.name,
  })
    .setClassMethodName('forRoot')
    .build();

  @Injectable()
  class ControllerProvider implements OnModuleInit, ControllerHandle<R> {
    private installed: R | undefined;

    constructor(
      @Inject(MODULE_OPTIONS_TOKEN) private readonly options: Options,
      @Inject(ModuleRef) private readonly moduleRef: ModuleRef,
    ) {}

    /** Undefined before module init. */
    get reconciler(): R | undefined {
      return this.installed;
    }

    onModuleInit(): void {
      this.installed = install(definition, this.options, (token) =>
        this.moduleRef.get(token, { strict: false }),
      );
    }
  }
  Object.defineProperty(ControllerProvider, 'name', { value: `${definition.name}Controller` });

  @Module({
    imports: definition.imports ?? [],
    providers: [ControllerProvider],
    exports: [ControllerProvider],
  })
  class ControllerModule extends ConfigurableModuleClass {}
  Object.defineProperty(ControllerModule, 'name', { value: `${definition.name}Module` });

  return { module: ControllerModule, controller: ControllerProvider, optionsToken: MODULE_OPTIONS_TOKEN };
}
