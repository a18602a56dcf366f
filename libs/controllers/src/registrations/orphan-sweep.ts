import type { Registry } from 'prom-client';
import { EphemeralRunner, EphemeralRunnerKind } from '@aro/api';
import { type Reader, type Runnable, sleep, systemClock } from '@aro/kube';
import { type ActionsServiceClient, type RunnerReference, isActionsNotFound } from '@aro/actions';
import { Logger, getOrCreateCounter, metricsRegistry } from '@aro/observability';
import { releasedRegistration } from './runner-registration';
import { type ScaleSetLedger, type ScaleSetLedgerEntry, holderOf } from './scale-set-ledger';
import type { ActionsClientProvider, UnregistrationQueue } from './unregistration-queue';
import type { LeakAudit, ScaleSetSweepResult } from './leak-audit';

export interface OrphanRegistrationSweepOptions {
  /** Uncached: the sweep's verdict must not rest on a cache that can lag behind a create. */
  reader: Reader;
  actions: ActionsClientProvider;
  queue: UnregistrationQueue;
  /** The scale sets this controller registered runners on: the only ones it sweeps. */
  ledger: ScaleSetLedger;
  logger: Logger;
  /** The namespace this controller watches; undefined for all. */
  namespace?: string;
  intervalMs?: number;
  /** How long a registration must have been seen without a runner before it is removed. */
  graceMs?: number;
  /** Removals queued by one pass at most; the rest wait for the next pass. */
  maxRemovalsPerPass?: number;
  registry?: Registry;
  /** Where each pass's findings go (the AutoscalingRunnerSets' `status.orphanSweep`); none in unit specs. */
  audit?: LeakAudit;
  /** How soon a new scale set's first audit comes; default {@link FIRST_AUDIT_DELAY_MS}, at most the interval. */
  firstAuditDelayMs?: number;
}

/** A scale set as the ledger knows it: one entry per namespace that registered runners on it. */
interface OwnedScaleSet {
  key: string;
  runnerScaleSetId: number;
  entries: ScaleSetLedgerEntry[];
}

interface Candidate {
  scaleSet: OwnedScaleSet;
  client: ActionsServiceClient;
  registration: RunnerReference;
}

const DEFAULT_MAX_REMOVALS_PER_PASS = 50;
/**
 * How soon after a scale set enters the ledger (its first runner about to register) its first audit
 * comes, at most: long enough for that registration to be made, so the audit counts it.
 */
export const FIRST_AUDIT_DELAY_MS = 10_000;
/** The wait between passes varies by this fraction either way, so replicas and restarts spread out. */
const JITTER = 0.2;

/**
 * Finds runner registrations on the Actions service that no EphemeralRunner holds, and hands them to
 * the unregistration queue. Upstream has no equivalent; it is what lets the queue stay in memory.
 *
 * A crash between dropping a runner's registration finalizer and the queue's API call, a lost
 * leadership with removals still queued, or removals given up after repeated failures all leave a
 * registration behind with nothing in the cluster that remembers it. The sweep runs when this
 * replica becomes leader and then periodically.
 *
 * It removes only what it can prove is orphaned, because a registration removed in error fails a
 * runner that may be about to take a job, or one that another controller manages:
 * - only scale sets in the ScaleSetLedger, the ones this controller registered runners on, which a
 *   crash does not forget; a scale set it merely sees named in the cluster (an upstream ARC being
 *   migrated from) is not its to sweep;
 * - of those, only scale sets whose every registering namespace it watches: one shared with a
 *   namespace outside its watch (another controller's) holds registrations it cannot judge;
 * - a registration whose name no EphemeralRunner in any watched namespace carries, seen so for
 *   `graceMs` (registration comes before the jitconfig secret, so a registration can briefly be ahead
 *   of what the cluster shows);
 * - checked again just before it is queued: the runners listed once more, the registration asked
 *   for by ID, so that neither a runner created meanwhile nor a removal done meanwhile is acted on;
 * - at most `maxRemovalsPerPass` per pass, the wait between passes jittered.
 *
 * A scale set new to the ledger gets its first audit within `firstAuditDelayMs` rather than at the
 * next full pass, up to an interval later (see {@link runScheduled}): a pass over the new sets alone,
 * judged by the same rules (an orphan it finds still waits out its grace).
 */
export class OrphanRegistrationSweep implements Runnable {
  readonly name = 'orphan-registration-sweep';
  readonly needLeaderElection = true;

  /** When each orphan (by scale set and runner ID) was first seen; forgotten once it is no longer orphaned. */
  private readonly firstSeenOrphaned = new Map<string, number>();
  private readonly intervalMs: number;
  private readonly graceMs: number;
  private readonly maxRemovals: number;
  private readonly found;
  /** Whether the last pass stopped at the cap, with more removals due. */
  private lastPassHitCap = false;
  /** Whether the last pass failed, or could not list some scale set: it proved nothing about them. */
  private lastPassIncomplete = false;
  private readonly firstAuditDelayMs: number;
  /** Scale sets (by {@link scaleSetKey}) new to the ledger since the last pass: their first audit is due. */
  private readonly awaitingFirstAudit = new Set<string>();
  /** When the next pass over every scale set is due, in the scheduled runs. */
  private fullPassDueAt = 0;
  /** The leadership term (its signal) of the last scheduled run: a new term starts with a full pass. */
  private term: AbortSignal | undefined;

  constructor(private readonly opts: OrphanRegistrationSweepOptions) {
    this.intervalMs = opts.intervalMs ?? 10 * 60_000;
    this.graceMs = opts.graceMs ?? 2 * 60_000;
    this.maxRemovals = Math.max(1, opts.maxRemovalsPerPass ?? DEFAULT_MAX_REMOVALS_PER_PASS);
    this.firstAuditDelayMs = Math.min(this.intervalMs, opts.firstAuditDelayMs ?? FIRST_AUDIT_DELAY_MS);
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

  /**
   * Notes a scale set the ledger just remembered (its first runner is about to register); returns how
   * soon the pass that audits it should run. Without this its first audit would wait for the next full
   * pass, up to an interval away, and `kubectl describe` would show none until then.
   */
  awaitFirstAudit(entry: ScaleSetLedgerEntry): number {
    this.awaitingFirstAudit.add(scaleSetKey(entry));
    return this.firstAuditDelayMs;
  }

  /**
   * One scheduled run (the leader's schedule calls it; it never throws): a pass over every scale set
   * when one is due (at the start of a leadership term, then every interval), otherwise a pass over the
   * scale sets awaiting their first audit alone, so an already-audited set costs no call before its
   * next full pass. Resolves to the delay until the next run.
   */
  async runScheduled(signal: AbortSignal): Promise<number> {
    const newTerm = signal !== this.term;
    this.term = signal;
    const full = newTerm || Date.now() >= this.fullPassDueAt;
    // Taken before the pass: a set remembered during it gets a pass of its own, and a set the pass
    // could not list is retried as any incomplete pass is, within the grace, not every few seconds.
    const firstAudits = new Set(this.awaitingFirstAudit);
    this.awaitingFirstAudit.clear();
    if (full || firstAudits.size > 0) {
      try {
        await this.sweepOnce(signal, full ? undefined : firstAudits);
      } catch (err) {
        if (!signal.aborted) this.opts.logger.error('Orphan registration sweep failed', err);
      }
      const next = Date.now() + this.nextPassDelayMs();
      // After a pass over the new sets alone, the full pass keeps its time unless a recheck is due sooner.
      this.fullPassDueAt = full ? next : Math.min(this.fullPassDueAt, next);
    }
    const untilFull = this.fullPassDueAt - Date.now();
    return this.awaitingFirstAudit.size > 0 ? Math.min(untilFull, this.firstAuditDelayMs) : untilFull;
  }

  /** How long after a pass the next one is due, jittered so that replicas and restarts spread out. */
  nextPassDelayMs(): number {
    // A registration first seen in this pass is re-checked once its grace has passed, not a full
    // interval later, so that a crash's leftovers go within minutes of the restart; so is the rest
    // of a pass that hit the cap. With no grace there is nothing to wait out, and a busy loop must
    // never hammer the service.
    // A pass that failed or could not list a scale set (the service or the apiserver briefly unable to
    // answer, as at a leader's start on a loaded node) is tried again as soon, rather than leaving what
    // it could not see for a whole interval.
    const recheck =
      (this.firstSeenOrphaned.size > 0 && this.graceMs > 0) || this.lastPassHitCap || this.lastPassIncomplete;
    const base = recheck ? Math.min(this.intervalMs, Math.max(this.graceMs, 1_000)) : this.intervalMs;
    return Math.max(1_000, base * (1 - JITTER + 2 * JITTER * Math.random()));
  }

  /**
   * One pass over every scale set this controller owns, or over the scale sets `only` names (by
   * {@link scaleSetKey}); returns how many registrations were queued for removal.
   */
  async sweepOnce(signal?: AbortSignal, only?: ReadonlySet<string>): Promise<number> {
    // Incomplete until the pass has looked at every scale set: a throw leaves it so.
    this.lastPassIncomplete = true;
    const results: ScaleSetSweepResult[] = [];
    const queued = await this.pass(results, signal, only);
    this.lastPassHitCap = queued >= this.maxRemovals;
    // After the pass, from what it judged by: one status write per scale set at most, when it changed.
    if (this.opts.audit && !signal?.aborted) await this.opts.audit.record(results, only === undefined);
    return queued;
  }

  private async pass(
    results: ScaleSetSweepResult[],
    signal?: AbortSignal,
    only?: ReadonlySet<string>,
  ): Promise<number> {
    const scaleSets = this.ownedScaleSets(await this.opts.ledger.entries()).filter(
      (s) => only === undefined || only.has(s.key),
    );

    // Registrations first, runners second. A runner exists before its registration (the reconciler
    // registers an existing EphemeralRunner), so every registration in the first list has its runner in
    // the second one, unless that runner really went away. Listing the other way round would show a
    // registration made between the two lists as an orphan.
    const listed: Array<[OwnedScaleSet, ActionsServiceClient, RunnerReference[]]> = [];
    let forgotten = 0;
    for (const scaleSet of scaleSets) {
      const listing = await this.listRegistrations(scaleSet, signal);
      if (listing === 'forgotten') forgotten++;
      else if (listing) listed.push([scaleSet, ...listing]);
    }
    // What this pass can tell about an orphan seen before: nothing, for a scale set it does not list.
    const judged = (orphanKey: string): boolean =>
      only === undefined || listed.some(([s]) => orphanKey.startsWith(`${s.key}|`));
    const runners = listed.length === 0 ? [] : await this.watchedRunners();
    let runnerNames = new Set(runners.map((r) => r.metadata?.name ?? ''));
    const resultOf = new Map<OwnedScaleSet, ScaleSetSweepResult>();
    for (const [scaleSet, , registrations] of listed) {
      const namespaces = scaleSet.entries.map((e) => e.namespace);
      const result: ScaleSetSweepResult = {
        runnerScaleSetId: scaleSet.runnerScaleSetId,
        namespaces,
        registrations: registrations.length,
        runners: runners.filter(
          (r) =>
            r.spec?.runnerScaleSetId === scaleSet.runnerScaleSetId &&
            namespaces.includes(r.metadata?.namespace ?? ''),
        ).length,
        orphans: registrations.filter((r) => !runnerNames.has(r.name)).length,
        removed: 0,
      };
      resultOf.set(scaleSet, result);
      results.push(result);
    }
    this.lastPassIncomplete = listed.length + forgotten < scaleSets.length;
    if (listed.length === 0) {
      for (const key of this.firstSeenOrphaned.keys()) if (judged(key)) this.firstSeenOrphaned.delete(key);
      return 0;
    }

    const now = Date.now();
    const stillOrphaned = new Set<string>();
    const due: Candidate[] = [];
    for (const [scaleSet, client, registrations] of listed) {
      for (const registration of registrations) {
        if (runnerNames.has(registration.name)) continue;
        const orphanKey = `${scaleSet.key}|${registration.id}`;
        stillOrphaned.add(orphanKey);
        const firstSeen = this.firstSeenOrphaned.get(orphanKey);
        if (firstSeen === undefined) {
          this.firstSeenOrphaned.set(orphanKey, now);
          this.opts.logger.info(
            'Found a runner registration without an EphemeralRunner; removing it once its grace passes',
            {
              runnerScaleSetId: scaleSet.runnerScaleSetId,
              runnerId: registration.id,
              runnerName: registration.name,
              graceMs: this.graceMs,
            },
          );
          if (this.graceMs > 0) continue;
        } else if (now - firstSeen < this.graceMs) {
          continue;
        }
        due.push({ scaleSet, client, registration });
      }
    }
    for (const key of this.firstSeenOrphaned.keys()) {
      if (!stillOrphaned.has(key) && judged(key)) this.firstSeenOrphaned.delete(key);
    }
    if (due.length === 0) return 0;

    // The re-check: what the cluster and the service say now, not what they said when the pass began.
    runnerNames = new Set((await this.watchedRunners()).map((r) => r.metadata?.name ?? ''));
    let queued = 0;
    for (const candidate of due) {
      if (queued >= this.maxRemovals) {
        this.opts.logger.info(
          'Reached the orphan removals allowed per pass; the rest wait for the next pass',
          {
            maxRemovalsPerPass: this.maxRemovals,
            waiting: due.length - queued,
          },
        );
        break;
      }
      if (await this.stillOrphaned(candidate, runnerNames, signal)) {
        const { scaleSet, registration } = candidate;
        // The entry of the namespace the runner most likely lived in carries the credentials to use.
        const holder = holderOf(scaleSet.entries[0], registration.name);
        if (this.opts.queue.push(holder, registration.id)) {
          queued++;
          const result = resultOf.get(scaleSet);
          if (result) result.removed++;
          this.found.inc();
          this.opts.logger.info('Queued the removal of an orphaned runner registration', {
            runnerScaleSetId: scaleSet.runnerScaleSetId,
            runnerId: registration.id,
            runnerName: registration.name,
          });
        }
      }
    }
    return queued;
  }

  /**
   * The ledger's entries grouped by scale set, less those shared with a namespace this controller
   * does not watch: there, a registration without a runner here may well have one there.
   */
  private ownedScaleSets(entries: ScaleSetLedgerEntry[]): OwnedScaleSet[] {
    const byScaleSet = new Map<string, OwnedScaleSet>();
    for (const entry of entries) {
      const key = scaleSetKey(entry);
      let scaleSet = byScaleSet.get(key);
      if (!scaleSet) {
        scaleSet = { key, runnerScaleSetId: entry.runnerScaleSetId, entries: [] };
        byScaleSet.set(key, scaleSet);
      }
      scaleSet.entries.push(entry);
    }
    const watched = this.opts.namespace;
    const owned: OwnedScaleSet[] = [];
    for (const scaleSet of byScaleSet.values()) {
      const foreign = scaleSet.entries.filter((e) => watched !== undefined && e.namespace !== watched);
      if (foreign.length > 0) {
        this.opts.logger.debug(
          'Not sweeping a scale set shared with namespaces this controller does not watch',
          {
            runnerScaleSetId: scaleSet.runnerScaleSetId,
            namespaces: foreign.map((e) => e.namespace),
          },
        );
        continue;
      }
      owned.push(scaleSet);
    }
    return owned;
  }

  /** The scale set's registrations, through the first entry whose configuration yields a client. */
  private async listRegistrations(
    scaleSet: OwnedScaleSet,
    signal?: AbortSignal,
  ): Promise<[ActionsServiceClient, RunnerReference[]] | 'forgotten' | undefined> {
    let lastError: unknown;
    for (const entry of scaleSet.entries) {
      try {
        const client = await this.opts.actions.getActionsClient(holderOf(entry, ''), signal);
        return [client, await client.listRunners(scaleSet.runnerScaleSetId, { signal })];
      } catch (err) {
        lastError = err;
      }
    }
    // Its AutoscalingRunnerSet deleted it while this pass ran (the chart's uninstall then takes the
    // credentials away): not a failure to report.
    if (!(await this.stillInLedger(scaleSet))) return 'forgotten';
    this.opts.logger.warn('Could not list the scale set registrations; skipping it this pass', {
      runnerScaleSetId: scaleSet.runnerScaleSetId,
      namespaces: scaleSet.entries.map((e) => e.namespace),
      err: lastError instanceof Error ? lastError.message : String(lastError),
    });
    return undefined;
  }

  private async stillInLedger(scaleSet: OwnedScaleSet): Promise<boolean> {
    const entries = await this.opts.ledger.entries().catch(() => undefined);
    return entries === undefined || entries.some((e) => scaleSetKey(e) === scaleSet.key);
  }

  /**
   * The EphemeralRunners in every namespace this controller watches that still hold their
   * registration: a runner that released it (see {@link releasedRegistration}) may stay long after a
   * crash lost its queued removal, which nothing but this sweep would then make.
   */
  private async watchedRunners(): Promise<EphemeralRunner[]> {
    const runners = await this.opts.reader.list<EphemeralRunner>(EphemeralRunnerKind, {
      namespace: this.opts.namespace,
    });
    return runners.filter((r) => !releasedRegistration(r));
  }

  private async stillOrphaned(
    { scaleSet, client, registration }: Candidate,
    runnerNames: Set<string>,
    signal?: AbortSignal,
  ): Promise<boolean> {
    if (runnerNames.has(registration.name)) return false;
    let current: RunnerReference;
    try {
      current = await client.getRunner(registration.id, { signal });
    } catch (err) {
      if (isActionsNotFound(err)) return false;
      this.opts.logger.warn('Could not re-check an orphaned registration; leaving it for the next pass', {
        runnerScaleSetId: scaleSet.runnerScaleSetId,
        runnerId: registration.id,
        err: err instanceof Error ? err.message : String(err),
      });
      return false;
    }
    return current.name === registration.name && current.runnerScaleSetId === scaleSet.runnerScaleSetId;
  }
}

/** A scale set's identity across the namespaces that register runners on it. */
function scaleSetKey(entry: ScaleSetLedgerEntry): string {
  return JSON.stringify([entry.githubConfigUrl.replace(/\/+$/, ''), entry.runnerScaleSetId]);
}
