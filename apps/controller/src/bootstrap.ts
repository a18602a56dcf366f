import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Manager, ManagerLifecycle } from '@aro/kube';
import { NestLoggerAdapter } from '@aro/observability';
import { ControllerAppModule, ControllerAppOptions } from './controller-app.module';
import { ExtensionError, extensionBlamedFor, loadExtensions } from './extensions';

/**
 * Creates the controller app with the extensions ARO_EXTENSIONS names, serves its probes and metrics,
 * then waits for the manager, which starts in the background once the app is initialised, so the
 * probes answer while the caches sync and while standing by for the lease. main.ts runs it as the
 * process; tests run it in-process with their own options.
 *
 * An extension that cannot be loaded, or that fails while the app builds its providers, is an
 * ExtensionError naming it.
 */
export async function startControllerApp(
  options: Omit<ControllerAppOptions, 'extensions' | 'managerStart'>,
): Promise<{ app: INestApplication; manager: Manager }> {
  const { config } = options;
  const extensions = loadExtensions(config.ARO_EXTENSIONS);
  let app: INestApplication | undefined;
  try {
    app = await NestFactory.create(
      ControllerAppModule.forRoot({
        ...options,
        extensions: extensions.flatMap((e) => e.modules),
        managerStart: 'background',
      }),
      // Errors are thrown to the caller, which names the extension at fault, instead of aborting.
      { bufferLogs: true, abortOnError: false },
    );
    app.useLogger(app.get(NestLoggerAdapter));
    app.enableShutdownHooks();
    await app.listen(config.PROBE_PORT, config.PROBE_BIND_ADDRESS);
    await app.get(ManagerLifecycle).started();
    return { app, manager: app.get(Manager) };
  } catch (err) {
    await app?.close().catch(() => undefined);
    const culprit = extensionBlamedFor(err, extensions);
    if (culprit) {
      throw new ExtensionError(
        culprit.name,
        `failed as the app started: ${err instanceof Error ? err.message : String(err)}`,
        { cause: err },
      );
    }
    throw err;
  }
}
