import { isAbsolute, resolve } from 'node:path';
import type { DynamicModule, Type } from '@nestjs/common';

/** A Nest module an extension exports: a class decorated with @Module, or a dynamic module. */
export type ExtensionModule = Type<unknown> | DynamicModule;

export interface LoadedExtension {
  /** As configured in ARO_EXTENSIONS. */
  name: string;
  /** The file it was loaded from. */
  path: string;
  modules: ExtensionModule[];
}

/**
 * An extension that cannot be used: not found, failing as it loads, exporting no Nest module, or
 * failing as the app builds its providers. The start stops with exit code 2 and this message.
 */
export class ExtensionError extends Error {
  override readonly name = 'ExtensionError';

  constructor(
    readonly extension: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`extension ${extension}: ${message}`, options);
  }
}

const MODULE_KEYS = ['imports', 'providers', 'controllers', 'exports'];

function isNestModule(value: unknown): value is ExtensionModule {
  if (typeof value === 'function') return MODULE_KEYS.some((key) => Reflect.hasOwnMetadata(key, value));
  return typeof (value as DynamicModule | undefined)?.module === 'function';
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function resolveExtension(name: string, cwd: string): string {
  const isPath = name.startsWith('.') || isAbsolute(name);
  try {
    return require.resolve(isPath ? resolve(cwd, name) : name, { paths: [cwd] });
  } catch (err) {
    throw new ExtensionError(
      name,
      `not found (${isPath ? `no file at ${resolve(cwd, name)}` : `no package of that name from ${cwd}`})`,
      { cause: err },
    );
  }
}

/**
 * Loads the extensions ARO_EXTENSIONS names, in order. Each is a package or a file whose default
 * export, or whose named exports ending in `Module`, are Nest modules; the app imports them beside its
 * own, so their providers can inject every runtime class (KubeClient, Manager, MultiClient, ...).
 */
export function loadExtensions(names: readonly string[], cwd = process.cwd()): LoadedExtension[] {
  return names.map((name) => {
    const path = resolveExtension(name, cwd);
    let exported: Record<string, unknown>;
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      exported = require(path) as Record<string, unknown>;
    } catch (err) {
      throw new ExtensionError(name, `failed to load: ${describe(err)}`, { cause: err });
    }
    const candidates =
      exported.default !== undefined
        ? [exported.default]
        : Object.entries(exported)
            .filter(([key]) => key.endsWith('Module'))
            .map(([, value]) => value);
    const modules = candidates.filter(isNestModule);
    if (modules.length === 0) {
      throw new ExtensionError(
        name,
        'exports no Nest module (export it as default, or under a name ending in "Module")',
      );
    }
    return { name, path, modules };
  });
}

function moduleName(module: ExtensionModule): string {
  return typeof module === 'function' ? module.name : module.module.name;
}

/**
 * The extension an error raised while the app was built comes from, if any: its file is in the
 * error's stack (a provider that threw), or its module is named in the message (Nest's "can't resolve
 * dependencies ... in the XModule context").
 */
export function extensionBlamedFor(
  err: unknown,
  extensions: readonly LoadedExtension[],
): LoadedExtension | undefined {
  const stack = err instanceof Error ? `${err.message}\n${err.stack ?? ''}` : String(err);
  return extensions.find(
    (ext) => stack.includes(ext.path) || ext.modules.some((m) => stack.includes(moduleName(m))),
  );
}
