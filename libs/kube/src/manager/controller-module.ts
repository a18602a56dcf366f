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

/** A provider of the app, by class or token (the manager, the client, the logger, ...). */
export type ProviderLookup = <T>(token: Type<T> | string | symbol) => T;

export interface ControllerModuleDefinition<Options extends object, Registered> {
  /** The controller's kind, as `EphemeralRunnerSet`: names the module, its options and its controller provider. */
  name: string;
  /**
   * Builds the controller (its reconciler and watch list, usually a `setupXController`) and registers
   * it with the manager. Called once at module init, when every provider of the app exists and the
   * manager has not started, so the controller's informers start with the cache.
   */
  register(options: Options, providers: ProviderLookup): Registered;
  /** Modules `register` needs beside the global ones (KubeModule, ObservabilityModule, ...). */
  imports?: ModuleMetadata['imports'];
}

/** What a controller module exports: what `register` returned, once the module has initialised. */
export interface ControllerHandle<Registered> {
  readonly reconciler: Registered | undefined;
}

export interface ControllerModule<Options extends object, Registered> {
  /** The Nest module; the app imports `module.forRoot(options)`. */
  module: ConfigurableModuleCls<Options, 'forRoot'>;
  /**
   * The provider that installs the controller in the manager at module init; a test gets it from the
   * app to reach the reconciler. (Not "registration": that word is a runner's on GitHub.)
   */
  controller: Type<ControllerHandle<Registered>>;
  /** The token of the module's options. */
  optionsToken: string | symbol;
}

/**
 * Makes the Nest module of a controller, so that adding a controller is a reconciler, a watch list
 * and one call of this: the options (`forRoot`), the call of `register` at module init and the export of
 * the registered reconciler are the same for every controller and written here once.
 */
export function controllerModule<Options extends object, Registered>(
  definition: ControllerModuleDefinition<Options, Registered>,
): ControllerModule<Options, Registered> {
  const { ConfigurableModuleClass, MODULE_OPTIONS_TOKEN } = new ConfigurableModuleBuilder<Options>({
    moduleName: definition.name,
  })
    .setClassMethodName('forRoot')
    .build();

  @Injectable()
  class ControllerProvider implements OnModuleInit, ControllerHandle<Registered> {
    private registered: Registered | undefined;

    constructor(
      @Inject(MODULE_OPTIONS_TOKEN) private readonly options: Options,
      @Inject(ModuleRef) private readonly moduleRef: ModuleRef,
    ) {}

    /** Undefined before module init. */
    get reconciler(): Registered | undefined {
      return this.registered;
    }

    onModuleInit(): void {
      this.registered = definition.register(this.options, (token) =>
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
  class ControllerNestModule extends ConfigurableModuleClass {}
  Object.defineProperty(ControllerNestModule, 'name', { value: `${definition.name}Module` });

  return { module: ControllerNestModule, controller: ControllerProvider, optionsToken: MODULE_OPTIONS_TOKEN };
}
