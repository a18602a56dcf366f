import type { Registry } from 'prom-client';
import { EphemeralRunner, EphemeralRunnerKind, EphemeralRunnerSet, EphemeralRunnerSetKind } from '@aro/api';
import { type Reader, type Runnable, sleep, systemClock } from '@aro/kube';
import type { RunnerReference } from '@aro/actions';
import { Logger, getOrCreateCounter, metricsRegistry } from '@aro/observability';
import type { ActionsClientProvider, UnregistrationQueue } from './unregistration-queue';

export interface OrphanRegistrationSweepOptions {
  /** Uncached: the sweep's verdict must not rest on a cache that can lag behind a create. */
  reader: Reader;
  actions: ActionsClientProvider;
  queue: UnregistrationQueue;
  logger: Logger;
  /** Namespace to sweep; undefined for all. */
  namespace?: string;
  intervalMs?: number;
  /** How long a registration must have been seen without a runner before it is removed. */
  graceMs?: number;
  registry?: Registry;
}

/**
 * Finds runner registrations on the Actions service that no EphemeralRunner holds, and hands them to
 * the unregistration queue. Upstream has no equivalent; it is what lets the queue stay in memory.
 *
 * A crash between dropping a runner's registration finalizer and the queue's API call, a lost
 * leadership with removals still queued, or removals given up after repeated failures all leave a
 * registration behind with nothing in the cluster that remembers it. The sweep runs when this
 * replica becomes leader and then periodically: for every scale set the cluster knows (from its
 * EphemeralRunnerSets and EphemeralRunners), it lists the scale set's registrations and compares
 * them with the runners that exist.
 *
 * A registration is only removed once it has been seen orphaned for `graceMs`. Registration comes
 * before the jitconfig secret, so a registration can briefly be ahead of what the cluster shows, and
 * one sweep's view is not enough evidence to remove something a runner may be about to use. A runner
 * whose registration is removed in error would fail and be recreated, which costs a job's start time,
 * so the grace errs on the side of waiting.
 */
export class OrphanRegistrationSweep implements Runnable {
  readonly name = 'orphan-registration-sweep';
  readonly needLeaderElection = true;

  /** When each orphan (by scope key) was first seen; forgotten once it is no longer orphaned. */
  private readonly firstSeenOrphaned = new Map<string, number>();
  private readonly intervalMs: number;
  private readonly graceMs: number;
  private readonly found;

  constructor(private readonly opts: OrphanRegistrationSweepOptions) {
    this.intervalMs = opts.intervalMs ?? 10 * 60_000;
    this.graceMs = opts.graceMs ?? 2 * 60_000;
    this.found = getOrCreateCounter(opts.registry ?? metricsRegistry(), {
      name: 'aro_orphan_registrations_total',
      help: 'Runner registrations found on the Actions service without an EphemeralRunner and queued for removal.',
    });
  }

  async start(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        await this.sweepOnce(signal);
      } catch (err) {
        if (!signal.aborted) this.opts.logger.error('Orphan registration sweep failed', err);
      }
      await sleep(systemClock, this.nextPassDelayMs(), signal);
    }
  }

  /** How long after a pass the next one is due. */
  nextPassDelayMs(): number {
    // A registration first seen in this pass is re-checked once its grace has passed, not a full
    // interval later, so that a crash's leftovers go within minutes of the restart.
    // With no grace there is nothing to wait out, and a busy loop must never hammer the service.
    const recheck = this.firstSeenOrphaned.size > 0 && this.graceMs > 0;
    return Math.max(1_000, recheck ? Math.min(this.intervalMs, this.graceMs) : this.intervalMs);
  }

  /** One pass over every known scale set; returns how many registrations were queued for removal. */
  async sweepOnce(signal?: AbortSignal): Promise<number> {
    const scaleSets = await this.knownScaleSets();

    // Registrations first, runners second. A runner exists before its registration (the reconciler
    // registers an existing EphemeralRunner), so every registration in the first list has its runner in
    // the second one, unless that runner really went away. Listing the other way round would show a
    // registration made between the two lists as an orphan.
    const registrationsBySet: Array<[string, EphemeralRunner, RunnerReference[]]> = [];
    for (const [scopeKey, holder] of scaleSets) {
      try {
        const client = await this.opts.actions.getActionsClient(holder, signal);
        registrationsBySet.push([
          scopeKey,
          holder,
          await client.listRunners(holder.spec.runnerScaleSetId, { signal }),
        ]);
      } catch (err) {
        this.opts.logger.warn('Could not list the scale set registrations; skipping it this pass', {
          namespace: holder.metadata?.namespace,
          runnerScaleSetId: holder.spec.runnerScaleSetId,
          err: err instanceof Error ? err.message : String(err),
        });
      }
    }
    if (registrationsBySet.length === 0) {
      this.firstSeenOrphaned.clear();
      return 0;
    }
    const runnerNames = new Set(
      (
        await this.opts.reader.list<EphemeralRunner>(EphemeralRunnerKind, { namespace: this.opts.namespace })
      ).map((r) => `${r.metadata?.namespace}/${r.metadata?.name}`),
    );

    const now = Date.now();
    const stillOrphaned = new Set<string>();
    let queued = 0;
    for (const [scopeKey, holder, registrations] of registrationsBySet) {
      const ns = holder.metadata?.namespace ?? '';
      const log = this.opts.logger.child({ namespace: ns, runnerScaleSetId: holder.spec.runnerScaleSetId });
      for (const registration of registrations) {
        if (runnerNames.has(`${ns}/${registration.name}`)) continue;
        const orphanKey = `${scopeKey}|${registration.id}`;
        stillOrphaned.add(orphanKey);
        const firstSeen = this.firstSeenOrphaned.get(orphanKey);
        if (firstSeen === undefined) {
          this.firstSeenOrphaned.set(orphanKey, now);
          log.info(
            'Found a runner registration without an EphemeralRunner; removing it once its grace passes',
            {
              runnerId: registration.id,
              runnerName: registration.name,
              graceMs: this.graceMs,
            },
          );
          if (this.graceMs > 0) continue;
        } else if (now - firstSeen < this.graceMs) {
          continue;
        }
        const target = { ...holder, metadata: { namespace: ns, name: registration.name } } as EphemeralRunner;
        if (this.opts.queue.push(target, registration.id)) {
          queued++;
          this.found.inc();
          log.info('Queued the removal of an orphaned runner registration', {
            runnerId: registration.id,
            runnerName: registration.name,
          });
        }
      }
    }
    for (const key of this.firstSeenOrphaned.keys()) {
      if (!stillOrphaned.has(key)) this.firstSeenOrphaned.delete(key);
    }
    return queued;
  }

  /**
   * The scale sets the cluster knows, from its EphemeralRunnerSets and EphemeralRunners, each with an
   * object that carries its GitHub configuration. Keyed by namespace, config URL and scale set ID: the
   * ID is unique only within one GitHub scope.
   */
  private async knownScaleSets(): Promise<Map<string, EphemeralRunner>> {
    const namespace = this.opts.namespace;
    const [sets, runners] = await Promise.all([
      this.opts.reader.list<EphemeralRunnerSet>(EphemeralRunnerSetKind, { namespace }),
      this.opts.reader.list<EphemeralRunner>(EphemeralRunnerKind, { namespace }),
    ]);
    const scaleSets = new Map<string, EphemeralRunner>();
    const remember = (holder: EphemeralRunner) => {
      const spec = holder.spec;
      const key = `${holder.metadata?.namespace}|${spec.githubConfigUrl}|${spec.runnerScaleSetId}`;
      if (spec.runnerScaleSetId > 0 && !scaleSets.has(key)) scaleSets.set(key, holder);
    };
    runners.forEach(remember);
    for (const set of sets) {
      remember({
        kind: EphemeralRunnerKind.kind,
        metadata: { namespace: set.metadata?.namespace, name: set.metadata?.name },
        spec: set.spec.ephemeralRunnerSpec,
      } as EphemeralRunner);
    }
    return scaleSets;
  }
}
