import { DiscoveryModule, DiscoveryService } from '@nestjs/core';
import { EphemeralRunnerKind } from '@aro/api';
import { PodKind } from '@aro/kube';
import type { Logger } from '@aro/observability';
import { ScaleSetLedger, rememberingScaleSets } from '../registrations/scale-set-ledger';
import { UnregistrationQueue, actionsClientsFrom } from '../registrations/unregistration-queue';
import { type ControllerOptions, type ProviderLookup, defineController } from '../shared/define-controller';
import { EphemeralRunnerReconciler } from './ephemeral-runner.reconciler';
import { RunnerExtension, isRunnerLifecycleObserver, isRunnerPodMutator } from './extensions';
import { EphemeralRunnerPhaseMetrics } from './phase-metrics';
import { ephemeralRunnerPredicate, ownedPodPredicate } from './predicates';
import type { EphemeralRunnerReconcilerOptions } from './reconciler-context';

export type EphemeralRunnerControllerConfig = EphemeralRunnerReconcilerOptions & {
  /**
   * Read through the client where the cache is not safe evidence (the default). `false` hands the
   * reconciler no reader, which then defaults to the client as upstream's does (tests of that default).
   */
  uncachedReads?: boolean;
};
export type EphemeralRunnerModuleOptions = EphemeralRunnerControllerConfig & ControllerOptions;

/**
 * The runner extensions (providers marked @RunnerExtension()) of every module of the app. Nest
 * instantiates every provider before the first onModuleInit, so extensions from modules imported
 * after this one are found too.
 */
function runnerExtensions(lookup: ProviderLookup, logger: Logger) {
  const extensions = lookup(DiscoveryService)
    .getProviders({ metadataKey: RunnerExtension.KEY })
    .map((wrapper) => wrapper.instance as unknown);
  const podMutators = extensions.filter(isRunnerPodMutator);
  const observers = extensions.filter(isRunnerLifecycleObserver);
  if (extensions.length > 0) {
    logger.info('Loaded runner extensions', {
      podMutators: podMutators.map((m) => m.name),
      observers: observers.map((o) => o.name),
    });
  }
  return { podMutators, observers };
}

/**
 * The EphemeralRunner controller: one runner, one pod, one job; woken by EphemeralRunners and the
 * pods they own. Registrations go through the Actions clients of the secret resolver, each scale set
 * remembered in UnregistrationModule's ledger before its first registration (the orphan sweep reads
 * it); removals are handed to UnregistrationModule's queue.
 */
export const ephemeralRunnerController = defineController({
  name: 'EphemeralRunner',
  imports: [DiscoveryModule],
  defaults: { maxConcurrentReconciles: 2, events: 'failures' },
  metrics: (registry, logger) => new EphemeralRunnerPhaseMetrics(logger, registry),
  providers: (lookup) => ({
    unregistrations: lookup(UnregistrationQueue),
    ledger: lookup(ScaleSetLedger),
    discovered: (logger: Logger) => runnerExtensions(lookup, logger),
  }),
  reconciler: (deps, { uncachedReads = true, ...options }: EphemeralRunnerControllerConfig) =>
    new EphemeralRunnerReconciler(
      {
        ...deps,
        apiReader: uncachedReads ? deps.apiReader : undefined,
        // Every registration starts by asking for a client: the scale set is remembered before it.
        actions: rememberingScaleSets(actionsClientsFrom(deps.resolver), deps.ledger),
        phaseMetrics: deps.metrics,
        ...deps.discovered(deps.logger),
      },
      options,
    ),
  watches: (watch) =>
    watch.for(EphemeralRunnerKind, ephemeralRunnerPredicate()).owns(PodKind, ownedPodPredicate()),
});
export const EphemeralRunnerModule = ephemeralRunnerController.module;
/** Its provider in the app: `app.get(EphemeralRunnerController).reconciler`. */
export const EphemeralRunnerController = ephemeralRunnerController.controller;
export const EPHEMERAL_RUNNER_MODULE_OPTIONS = ephemeralRunnerController.optionsToken;
