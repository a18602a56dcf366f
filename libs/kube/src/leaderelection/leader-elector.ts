import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { getOrCreateCounter, getOrCreateGauge, metricsRegistry, type Logger } from '@aro/observability';
import type { Registry } from 'prom-client';
import { type Clock, sleep, systemClock } from '../queue/clock';
import type { Lease, LeaseClient, LeaseSpec } from './lease-client';

/**
 * Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics.
 *
 * Written in the project: the one npm candidate is GPL-3.0, drops leadership on a single failed renew,
 * trusts the local clock against the lease's timestamps and ignores leaseTransitions (see
 * design/research/ts-stack.md, section 2). What this keeps from client-go:
 * - the observed-time rule: another holder's lease counts as expired only when this process has seen
 *   the same record unchanged for leaseDuration by its own monotonic clock, so clock skew between
 *   replicas can never make two of them lead at once;
 * - optimistic concurrency: a create that meets AlreadyExists, or a replace carrying a stale
 *   resourceVersion (409), means another candidate won the race;
 * - renewal every retryPeriod, and leadership is lost when no renewal succeeded within renewDeadline
 *   (which is shorter than leaseDuration, so the old leader stops before a standby can take over);
 * - release on cancel: clearing holderIdentity lets a standby take over at once instead of waiting
 *   out the lease.
 * Where it is stricter than client-go: the renewDeadline is counted from the start of the last renewal
 * that succeeded, not from the next attempt after it. client-go's leader leads up to retryPeriod +
 * renewDeadline past its last renewal, which timings it accepts (renewDeadline under leaseDuration) can
 * put past the moment a standby may take the lease: 8/7/2 s leads 9 s on an 8 s lease. Counted from the
 * attempt's start, which is no later than the renewTime the standbys count from, the leader stops at
 * most renewDeadline after it, always before leaseDuration. And a leader whose renewal finds another
 * holder steps down at once rather than retrying until renewDeadline (a leader whose monotonic clock
 * stood still through a VM suspend can wake to find its lease taken), and an attempt abandoned at its
 * deadline never writes.
 */
export interface LeaderElectionOptions {
  leaseName: string;
  leaseNamespace: string;
  /** Unique per process; defaults to `$POD_NAME` (or the hostname) + '_' + a random suffix. */
  identity?: string;
  /** How long a standby waits, from when it last saw the lease change, before taking it. Default 15 s. */
  leaseDurationMs?: number;
  /** How long the leader keeps retrying a renewal before it gives up leading. Default 10 s. */
  renewDeadlineMs?: number;
  /** Pause between attempts to acquire or renew. Default 2 s. */
  retryPeriodMs?: number;
  /** Acquire attempts wait retryPeriod * (1 + random * jitterFactor), so standbys do not move in step. Default 1.2. */
  jitterFactor?: number;
  /** Clear the holder when stepping down cleanly. Default true. */
  releaseOnCancel?: boolean;
}

export interface LeaderElectorDeps {
  logger: Logger;
  registry?: Registry;
  clock?: Clock;
  /** For tests; Math.random by default. */
  random?: () => number;
}

export interface LeaderCallbacks {
  /** Called once, when this process has acquired the lease. */
  onStartedLeading(): void;
  /** Called whenever the observed holder changes (including to this process). */
  onNewLeader?(identity: string): void;
}

/**
 * One acquire-or-renew attempt: this process holds the lease now; another holds it (and this process
 * has not seen it unchanged for its duration); or the attempt failed (no answer, or an error).
 */
type Attempt = 'acquired' | 'heldByOther' | 'failed';

/** Why `run` returned: the lease could not be renewed in time, or the caller aborted. */
export type ElectionOutcome = 'lost' | 'cancelled';

export function defaultIdentity(): string {
  return `${process.env.POD_NAME || hostname()}_${randomUUID()}`;
}

/** RFC 3339 with microseconds, the wire format of metav1.MicroTime. */
export function microTime(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export class LeaderElector {
  readonly identity: string;
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly jitterFactor: number;
  private readonly releaseOnCancel: boolean;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly log: Logger;
  private readonly masterStatus;
  private readonly slowpath;

  /** The last record read or written, and when (monotonic) it was first seen in that state. */
  private observed: LeaseSpec | undefined;
  private observedAt = 0;
  /** The lease object as last read or written, whose resourceVersion a release must carry. */
  private lastLease: Lease | undefined;
  private reportedLeader: string | undefined;
  private leading = false;
  /**
   * When (monotonic) the last attempt that acquired or renewed the lease started: the renewTime it
   * wrote is no earlier, so no standby may take the lease before this + leaseDuration.
   */
  private renewedAt = 0;

  constructor(
    private readonly leases: LeaseClient,
    private readonly options: LeaderElectionOptions,
    deps: LeaderElectorDeps,
  ) {
    this.identity = options.identity ?? defaultIdentity();
    this.leaseDurationMs = options.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = options.retryPeriodMs ?? 2_000;
    this.jitterFactor = options.jitterFactor ?? 1.2;
    this.releaseOnCancel = options.releaseOnCancel ?? true;
    if (this.leaseDurationMs <= this.renewDeadlineMs) {
      throw new Error(
        `leader election for lease ${this.leaseRef()}: leaseDuration (${this.leaseDurationMs} ms) must exceed ` +
          `renewDeadline (${this.renewDeadlineMs} ms), or a standby could take over while the leader still acts`,
      );
    }
    if (this.renewDeadlineMs <= this.jitterFactor * this.retryPeriodMs) {
      throw new Error(
        `leader election for lease ${this.leaseRef()}: renewDeadline (${this.renewDeadlineMs} ms) must exceed ` +
          `jitterFactor * retryPeriod (${this.jitterFactor * this.retryPeriodMs} ms)`,
      );
    }
    this.clock = deps.clock ?? systemClock;
    this.random = deps.random ?? Math.random;
    this.log = deps.logger.child({
      component: 'leader-election',
      lease: this.leaseRef(),
      identity: this.identity,
    });
    this.masterStatus = getOrCreateGauge(deps.registry ?? metricsRegistry(), {
      name: 'leader_election_master_status',
      help: 'Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master.',
      labelNames: ['name'] as const,
    });
    this.masterStatus.set({ name: options.leaseName }, 0);
    // As client-go: a series appears only once the slow path has been taken.
    this.slowpath = getOrCreateCounter(deps.registry ?? metricsRegistry(), {
      name: 'leader_election_slowpath_total',
      help: "Total number of slow path exercised in renewing leader leases. 'name' is the string used to identify the lease. Please make sure to group by name.",
      labelNames: ['name'] as const,
    });
  }

  /** True while this process holds the lease and has renewed it within renewDeadline. */
  isLeader(): boolean {
    return this.leading;
  }

  /** The holder as last observed ('' when the lease is free, undefined before the first read). */
  leader(): string | undefined {
    return this.observed?.holderIdentity ?? (this.observed ? '' : undefined);
  }

  /**
   * Campaigns until the lease is acquired, then renews it until renewal fails for renewDeadline
   * ('lost') or `signal` aborts ('cancelled'). It does not release on cancel: the caller first stops
   * the work that leadership guards, then calls `release()`, so that no standby starts while this
   * process is still writing.
   */
  async run(signal: AbortSignal, callbacks: LeaderCallbacks): Promise<ElectionOutcome> {
    this.log.info('Campaigning for leadership');
    const acquired = await this.acquire(signal, callbacks);
    // Acquired just as the caller aborted: leading is set, so the caller's release() hands it back.
    if (!acquired || signal.aborted) return 'cancelled';
    this.log.info('Acquired leadership');
    callbacks.onStartedLeading();
    const outcome = await this.renew(signal, callbacks);
    if (outcome === 'lost') {
      this.setLeading(false);
      this.log.error('Lost leadership: the lease was not renewed within renewDeadline', undefined, {
        renewDeadlineMs: this.renewDeadlineMs,
        holder: this.observed?.holderIdentity,
      });
    }
    return outcome;
  }

  /**
   * Steps down: clears holderIdentity so a standby takes over on its next attempt rather than after the
   * lease expires. A no-op when not leading, when releaseOnCancel is off, or when the lease has moved on
   * (the replace then fails on its resourceVersion).
   */
  async release(): Promise<void> {
    const wasLeading = this.leading;
    this.setLeading(false);
    if (!wasLeading || !this.releaseOnCancel || this.lastLease === undefined) return;
    const now = microTime(this.clock.wallTime());
    const spec: LeaseSpec = {
      leaseDurationSeconds: 1,
      acquireTime: now,
      renewTime: now,
      leaseTransitions: this.observed?.leaseTransitions ?? 0,
    };
    try {
      const last = this.lastLease;
      const released = await this.withDeadline(
        () => this.leases.replace({ ...last, spec: { ...last.spec, holderIdentity: undefined, ...spec } }),
        this.renewDeadlineMs,
      );
      if (released === undefined) throw new Error(`no answer within ${this.renewDeadlineMs} ms`);
      this.observe(released, this.clock.now());
      this.log.info('Released the lease');
    } catch (e) {
      this.log.warn('Could not release the lease; a standby takes over once it expires', {
        err: errorText(e),
      });
    }
  }

  private async acquire(signal: AbortSignal, callbacks: LeaderCallbacks): Promise<boolean> {
    while (!signal.aborted) {
      const started = this.clock.now();
      const attempt =
        (await this.withDeadline((abandoned) => this.tryAcquireOrRenew(abandoned), this.renewDeadlineMs)) ??
        'failed';
      this.reportLeader(callbacks);
      if (attempt === 'acquired') {
        this.renewedAt = started;
        this.setLeading(true);
        return true;
      }
      await sleep(this.clock, this.retryPeriodMs * (1 + this.random() * this.jitterFactor), signal);
    }
    return false;
  }

  private async renew(signal: AbortSignal, callbacks: LeaderCallbacks): Promise<ElectionOutcome> {
    for (;;) {
      await sleep(this.clock, this.retryPeriodMs, signal);
      if (signal.aborted) return 'cancelled';
      // From the last renewal, not from now: this attempt comes retryPeriod after it (later still when
      // the event loop was held up), and a standby counts from that renewal.
      const deadline = this.renewedAt + this.renewDeadlineMs;
      let renewed = false;
      for (;;) {
        const remaining = deadline - this.clock.now();
        if (remaining <= 0) break;
        const started = this.clock.now();
        const attempt =
          (await this.withDeadline((abandoned) => this.tryAcquireOrRenew(abandoned), remaining)) ?? 'failed';
        if (attempt === 'acquired') this.renewedAt = started;
        this.reportLeader(callbacks);
        if (attempt === 'heldByOther' && !signal.aborted) {
          // Someone else holds the lease now (it took it over while this process could not renew, e.g.
          // its clock stood still through a suspend). Retrying until renewDeadline would leave two
          // leaders acting until then; there is nothing left to renew, so leadership ends here.
          this.log.warn('Another candidate holds the lease; stepping down at once', {
            holder: this.observed?.holderIdentity,
          });
          return 'lost';
        }
        renewed = attempt === 'acquired';
        if (renewed || signal.aborted) break;
        this.log.warn('Failed to renew the lease; retrying', {
          msLeft: Math.max(0, deadline - this.clock.now()),
        });
        await sleep(this.clock, Math.min(this.retryPeriodMs, deadline - this.clock.now()), signal);
        if (signal.aborted) break;
      }
      if (signal.aborted) return 'cancelled';
      if (!renewed) return 'lost';
    }
  }

  /**
   * One attempt, as client-go's tryAcquireOrRenew: read the lease; create it if absent; leave it alone
   * if someone else holds it and it has not been seen unchanged for its duration; otherwise write it
   * with this identity, carrying the read resourceVersion so a concurrent writer makes this fail.
   * A failed write is followed by one more read, only to learn who holds the lease now: never by a
   * second write, which would put this identity over the winner's. An attempt abandoned at its
   * deadline writes nothing when its read answers late: the elector may have stepped down meanwhile,
   * and a lease renewed for a process that no longer leads keeps every standby waiting for nothing.
   */
  private async tryAcquireOrRenew(abandoned: AbortSignal): Promise<Attempt> {
    const now = this.clock.wallTime();
    const desired: LeaseSpec = {
      holderIdentity: this.identity,
      leaseDurationSeconds: Math.ceil(this.leaseDurationMs / 1000),
      acquireTime: microTime(now),
      renewTime: microTime(now),
      leaseTransitions: 0,
    };
    let current: Lease | undefined;
    try {
      current = await this.leases.get(this.options.leaseNamespace, this.options.leaseName);
    } catch (e) {
      this.log.debug('Could not read the lease', { err: errorText(e) });
      return 'failed';
    }
    if (current === undefined) {
      if (abandoned.aborted) return 'failed';
      try {
        const created = await this.leases.create({
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: this.options.leaseName, namespace: this.options.leaseNamespace },
          spec: desired,
        });
        this.observe(created, this.clock.now());
        return 'acquired';
      } catch (e) {
        // Typically AlreadyExists: another candidate created it first.
        this.log.debug('Could not create the lease', { err: errorText(e) });
        return this.holderAfterFailedWrite();
      }
    }

    const record = current.spec ?? {};
    const lastSeenVersion = this.lastLease?.metadata?.resourceVersion;
    this.observe(current, this.clock.now());
    const heldByOther = !!record.holderIdentity && record.holderIdentity !== this.identity;
    if (heldByOther && !this.observedExpired(record)) return 'heldByOther';

    if (record.holderIdentity === this.identity) {
      desired.acquireTime = record.acquireTime ?? desired.acquireTime;
      desired.leaseTransitions = record.leaseTransitions ?? 0;
      // client-go renews by writing over the lease it last saw, and reads it first (its "slow path")
      // only when that write fails: when the lease changed since. ARO always reads first, so it counts
      // the renewals that found the lease changed since it last saw it, the ones client-go would count.
      if (current.metadata?.resourceVersion !== lastSeenVersion) {
        this.slowpath.inc({ name: this.options.leaseName });
      }
    } else {
      desired.leaseTransitions = (record.leaseTransitions ?? 0) + 1;
    }
    if (abandoned.aborted) return 'failed';
    try {
      const written = await this.leases.replace({ ...current, spec: { ...current.spec, ...desired } });
      this.observe(written, this.clock.now());
      return 'acquired';
    } catch (e) {
      this.log.debug('Could not write the lease', { err: errorText(e) });
      return this.holderAfterFailedWrite();
    }
  }

  /**
   * After a write failed (typically a Conflict: another candidate wrote first), reads the lease again
   * so that a leader which lost the race learns it at once instead of after renewDeadline.
   */
  private async holderAfterFailedWrite(): Promise<Attempt> {
    try {
      const now = await this.leases.get(this.options.leaseNamespace, this.options.leaseName);
      if (now === undefined) return 'failed';
      this.observe(now, this.clock.now());
      const holder = now.spec?.holderIdentity;
      return holder && holder !== this.identity ? 'heldByOther' : 'failed';
    } catch (e) {
      this.log.debug('Could not read the lease after a failed write', { err: errorText(e) });
      return 'failed';
    }
  }

  /** Records what was seen; the observed time moves only when the record itself changed. */
  private observe(lease: Lease, at: number): void {
    const record = lease.spec ?? {};
    if (this.observed === undefined || !sameRecord(this.observed, record)) {
      this.observed = { ...record };
      this.observedAt = at;
    }
    this.lastLease = lease;
  }

  private observedExpired(record: LeaseSpec): boolean {
    const durationMs = (record.leaseDurationSeconds ?? Math.ceil(this.leaseDurationMs / 1000)) * 1000;
    return this.observedAt + durationMs <= this.clock.now();
  }

  private reportLeader(callbacks: LeaderCallbacks): void {
    const holder = this.observed?.holderIdentity ?? '';
    if (holder === this.reportedLeader) return;
    this.reportedLeader = holder;
    if (holder === '') return;
    if (holder !== this.identity) this.log.info('Observed a new leader', { leader: holder });
    callbacks.onNewLeader?.(holder);
  }

  private setLeading(leading: boolean): void {
    this.leading = leading;
    this.masterStatus.set({ name: this.options.leaseName }, leading ? 1 : 0);
  }

  /**
   * The call's result, or undefined if it took longer than `ms`. The call itself runs on, but its
   * `abandoned` signal is aborted then, so it can refrain from acting on what it learns too late.
   */
  private async withDeadline<T>(
    call: (abandoned: AbortSignal) => Promise<T>,
    ms: number,
  ): Promise<T | undefined> {
    const timer = new AbortController();
    const abandoned = new AbortController();
    try {
      const result = await Promise.race([
        call(abandoned.signal),
        sleep(this.clock, ms, timer.signal).then(() => undefined),
      ]);
      if (result === undefined) abandoned.abort();
      return result;
    } finally {
      // Only after the race has settled: cancelling inside it would let the timer win the race.
      timer.abort();
    }
  }

  private leaseRef(): string {
    return `${this.options.leaseNamespace}/${this.options.leaseName}`;
  }
}

function sameRecord(a: LeaseSpec, b: LeaseSpec): boolean {
  return (
    (a.holderIdentity ?? '') === (b.holderIdentity ?? '') &&
    (a.leaseDurationSeconds ?? 0) === (b.leaseDurationSeconds ?? 0) &&
    (a.acquireTime ?? '') === (b.acquireTime ?? '') &&
    (a.renewTime ?? '') === (b.renewTime ?? '') &&
    (a.leaseTransitions ?? 0) === (b.leaseTransitions ?? 0)
  );
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
