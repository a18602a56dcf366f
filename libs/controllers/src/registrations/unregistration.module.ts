import { ConfigurableModuleBuilder, Global, Inject, Injectable, Module, OnModuleInit } from '@nestjs/common';
import { SchedulerRegistry, ScheduleModule } from '@nestjs/schedule';
import { Registry } from 'prom-client';
import { KubeClient, LeaderSchedule, Manager } from '@aro/kube';
import { LOGGER, Logger } from '@aro/observability';
import { SecretResolver } from '@aro/secrets';
import { LeakAudit } from './leak-audit';
import { OrphanRegistrationSweep } from './orphan-sweep';
import { ScaleSetLedger } from './scale-set-ledger';
import { UnregistrationQueue, actionsClientsFrom } from './unregistration-queue';

export interface UnregistrationModuleOptions {
  /** Namespace whose scale sets the sweep looks at; '' or undefined for all. */
  namespace?: string;
  /** Concurrent removals. Default 4. */
  workers?: number;
  /** How long a shutdown gives queued removals. Default 10 s. */
  drainTimeoutMs?: number;
  /** Retry of a removal the service refused because the runner is executing a job. Default 30 s. */
  jobStillRunningRetryMs?: number;
  /** Orphan sweep period. Default 10 min. */
  orphanSweepIntervalMs?: number;
  /** How long a registration is seen without a runner before it is removed. Default 2 min. */
  orphanGraceMs?: number;
  /** Orphaned registrations one sweep pass queues for removal at most. Default 50. */
  orphanMaxRemovalsPerPass?: number;
  /**
   * The controller's own namespace, where the ConfigMap `aro-runner-scale-sets` remembers the scale
   * sets it registered runners on (the sweep's durable memory). The app gives POD_NAMESPACE, else the
   * watched namespace, else `default`. The controller needs get, create and patch on ConfigMaps there.
   */
  ledgerNamespace?: string;
}

export const {
  ConfigurableModuleClass: UnregistrationConfigurableModule,
  MODULE_OPTIONS_TOKEN: UNREGISTRATION_MODULE_OPTIONS,
} = new ConfigurableModuleBuilder<UnregistrationModuleOptions>({ moduleName: 'Unregistration' })
  .setClassMethodName('forRoot')
  .build();

/**
 * Puts the queue's workers and the sweep's schedule under the manager: both leader-only. The sweep
 * runs through the SchedulerRegistry (timeout `orphan-registration-sweep`) from the moment this
 * replica leads until it stops leading.
 */
@Injectable()
export class UnregistrationWorkers implements OnModuleInit {
  /** The sweep's schedule; exposed so tests and health checks can see whether a pass is scheduled. */
  readonly sweepSchedule: LeaderSchedule;

  constructor(
    private readonly manager: Manager,
    private readonly queue: UnregistrationQueue,
    sweep: OrphanRegistrationSweep,
    ledger: ScaleSetLedger,
    scheduler: SchedulerRegistry,
    @Inject(LOGGER) logger: Logger,
  ) {
    this.sweepSchedule = new LeaderSchedule(
      scheduler,
      { name: sweep.name, runOnce: (signal) => sweep.runScheduled(signal) },
      logger.child({ component: 'orphan-registration-sweep' }),
    );
    // A scale set's first audit soon after its first runner registers, not up to an interval later.
    ledger.onRemembered((entry) => this.sweepSchedule.runWithin(sweep.awaitFirstAudit(entry)));
  }

  onModuleInit(): void {
    this.manager.add(this.queue);
    this.manager.add(this.sweepSchedule);
  }
}

/**
 * Removing runner registrations from the Actions service, out of the reconcile loop: the
 * {@link UnregistrationQueue} the EphemeralRunner reconciler hands removals to, and the
 * {@link OrphanRegistrationSweep}, which finds the registrations no runner holds (after a crash, a lost
 * leadership, a removal given up). Global, so any controller module injects the queue.
 */
@Global()
@Module({
  imports: [ScheduleModule.forRoot()],
  providers: [
    {
      provide: UnregistrationQueue,
      inject: [UNREGISTRATION_MODULE_OPTIONS, SecretResolver, LOGGER, Registry],
      useFactory: (
        opts: UnregistrationModuleOptions,
        resolver: SecretResolver,
        logger: Logger,
        registry: Registry,
      ) =>
        new UnregistrationQueue({
          actions: actionsClientsFrom(resolver),
          logger: logger.child({ component: 'runner-unregistration' }),
          workers: opts.workers,
          drainTimeoutMs: opts.drainTimeoutMs,
          jobStillRunningRetryMs: opts.jobStillRunningRetryMs,
          registry,
        }),
    },
    {
      // Here, not in the EphemeralRunner module: the sweep reads it and the reconciler writes it, and
      // this module is global, so both get the one instance.
      provide: ScaleSetLedger,
      inject: [UNREGISTRATION_MODULE_OPTIONS, KubeClient, LOGGER],
      useFactory: (opts: UnregistrationModuleOptions, client: KubeClient, logger: Logger) =>
        new ScaleSetLedger({
          client,
          namespace: opts.ledgerNamespace || opts.namespace || 'default',
          logger: logger.child({ component: 'scale-set-ledger' }),
        }),
    },
    {
      provide: OrphanRegistrationSweep,
      inject: [
        UNREGISTRATION_MODULE_OPTIONS,
        KubeClient,
        SecretResolver,
        UnregistrationQueue,
        ScaleSetLedger,
        LOGGER,
        Registry,
      ],
      useFactory: (
        opts: UnregistrationModuleOptions,
        client: KubeClient,
        resolver: SecretResolver,
        queue: UnregistrationQueue,
        ledger: ScaleSetLedger,
        logger: Logger,
        registry: Registry,
      ) =>
        new OrphanRegistrationSweep({
          // Uncached: the sweep's verdict must not rest on a cache that lags behind a create.
          reader: client,
          actions: actionsClientsFrom(resolver),
          queue,
          ledger,
          logger: logger.child({ component: 'orphan-registration-sweep' }),
          namespace: opts.namespace || undefined,
          intervalMs: opts.orphanSweepIntervalMs,
          graceMs: opts.orphanGraceMs,
          maxRemovalsPerPass: opts.orphanMaxRemovalsPerPass,
          registry,
          audit: new LeakAudit({ client, logger: logger.child({ component: 'leak-audit' }), registry }),
        }),
    },
    UnregistrationWorkers,
  ],
  exports: [UnregistrationQueue, OrphanRegistrationSweep, ScaleSetLedger, UnregistrationWorkers],
})
export class UnregistrationModule extends UnregistrationConfigurableModule {}
