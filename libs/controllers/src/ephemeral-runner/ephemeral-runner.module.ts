import { DiscoveryModule, DiscoveryService } from '@nestjs/core';
import { LOGGER, type Logger } from '@aro/observability';
import { SecretResolver } from '@aro/secrets';
import { type ProviderLookup, controllerModule } from '@aro/kube';
import { controllerPartsOf } from '../shared/controller-parts';
import { RunnerExtension, isRunnerLifecycleObserver, isRunnerPodMutator } from './extensions';
import { type EphemeralRunnerControllerConfig, setupEphemeralRunnerController } from './setup';
import { ScaleSetLedger } from '../registrations/scale-set-ledger';
import { UnregistrationQueue, actionsClientsFrom } from '../registrations/unregistration-queue';

export interface EphemeralRunnerModuleOptions extends EphemeralRunnerControllerConfig {
  /**
   * Read through the client where the cache is not safe evidence (the default). `false` hands the
   * controller no reader, which then defaults to the client as upstream's does (tests of that default).
   */
  uncachedReads?: boolean;
  /** The clock of the time-based branches (tests). */
  now?: () => number;
}

/**
 * The runner extensions (providers marked @RunnerExtension()) of every module of the app. Nest
 * instantiates every provider before the first onModuleInit, so extensions from modules imported
 * after this one are found too.
 */
function runnerExtensions(providers: ProviderLookup) {
  const extensions = providers(DiscoveryService)
    .getProviders({ metadataKey: RunnerExtension.KEY })
    .map((wrapper) => wrapper.instance as unknown);
  const podMutators = extensions.filter(isRunnerPodMutator);
  const observers = extensions.filter(isRunnerLifecycleObserver);
  if (extensions.length > 0) {
    providers<Logger>(LOGGER).info('Loaded runner extensions', {
      podMutators: podMutators.map((m) => m.name),
      observers: observers.map((o) => o.name),
    });
  }
  return { podMutators, observers };
}

/**
 * The EphemeralRunner controller as a Nest module: one runner, one pod, one job. Needs the global
 * KubeModule, SecretsModule, UnregistrationModule and ObservabilityModule.
 */
const EphemeralRunnerParts = controllerModule({
  name: 'EphemeralRunner',
  imports: [DiscoveryModule],
  register: ({ uncachedReads = true, now, ...config }: EphemeralRunnerModuleOptions, providers) => {
    const parts = controllerPartsOf(providers, now);
    return setupEphemeralRunnerController(
      {
        ...parts,
        apiReader: uncachedReads ? parts.client : undefined,
        actions: actionsClientsFrom(providers(SecretResolver)),
        unregistrations: providers(UnregistrationQueue),
        ledger: providers(ScaleSetLedger),
        ...runnerExtensions(providers),
      },
      config,
    );
  },
});
export const EphemeralRunnerModule = EphemeralRunnerParts.module;
export const EphemeralRunnerController = EphemeralRunnerParts.controller;
export const EPHEMERAL_RUNNER_MODULE_OPTIONS = EphemeralRunnerParts.optionsToken;
