import { metricsRegistry, type Logger } from '@aro/observability';
import type { Registry } from 'prom-client';
import type { InformerCache } from '../cache';
import type { KubeClient } from '../client';
import { LeaderElector, type LeaderElectionOptions } from '../leaderelection/leader-elector';
import { type LeaseClient, kubeLeaseClient } from '../leaderelection/lease-client';
import { type Clock, sleep, systemClock } from '../queue/clock';
import type { HealthStatus, Runnable } from './runnable';

export interface ManagerOptions {
  client: KubeClient;
  cache: InformerCache;
  logger: Logger;
  registry?: Registry;
  /** Elect a leader on this Lease before starting leader-only runnables; false runs them at once. */
  leaderElection?: LeaderElectionOptions | false;
  /** How long stop() lets in-flight work finish before cancelling it. Default 30 s. */
  gracefulShutdownTimeoutMs?: number;
  /** How long start() waits for the caches to list everything. Default 2 min. */
  cacheSyncTimeoutMs?: number;
  /**
   * Called after leadership was lost and every leader-only runnable was told to stop. The default
   * logs and exits with status 1: a replica that lost the lease must not keep writing, and a restart
   * is the simplest way to make sure nothing it started lives on.
   */
  onLeadershipLost?: (manager: Manager) => void;
  /** Leases through another client (tests); default the manager's client. */
  leaseClient?: LeaseClient;
  clock?: Clock;
}

interface Started {
  runnable: Runnable;
  stop: AbortController;
  cancel: AbortController;
  done: Promise<void>;
  finished: boolean;
}

/**
 * Runs the process's runnables around one informer cache, as controller-runtime's manager:
 *
 * start(): runnables that do not need leadership start at once; then the cache starts and start()
 * waits until it has listed every kind; then (with leader election) the campaign begins in the
 * background and start() returns, so a standby replica still serves health and readiness; once
 * leading, the leader-only runnables start.
 *
 * stop(): every runnable is told to stop taking work; in-flight work gets gracefulShutdownTimeoutMs;
 * then the lease is released (only if the leader-only work really finished, so no standby starts
 * while this process still writes) and the cache stops.
 *
 * Leadership lost: every leader-only runnable is stopped and cancelled at once, then onLeadershipLost.
 */
export class Manager {
  readonly client: KubeClient;
  readonly cache: InformerCache;
  readonly logger: Logger;
  readonly registry: Registry;
  readonly clock: Clock;
  private readonly log: Logger;
  private readonly runnables: Runnable[] = [];
  private readonly running: Started[] = [];
  private readonly failures = new Map<string, string>();
  private readonly elector: LeaderElector | undefined;
  private readonly electionAbort = new AbortController();
  private election: Promise<void> | undefined;
  private readonly gracefulShutdownTimeoutMs: number;
  private readonly cacheSyncTimeoutMs: number;
  private readonly onLeadershipLost: (manager: Manager) => void;
  private readonly electedWaiters: Array<() => void> = [];
  private state: 'new' | 'starting' | 'started' | 'stopping' | 'stopped' = 'new';
  private leading = false;
  private stopping: Promise<void> | undefined;

  constructor(options: ManagerOptions) {
    this.client = options.client;
    this.cache = options.cache;
    this.logger = options.logger;
    this.registry = options.registry ?? metricsRegistry();
    this.clock = options.clock ?? systemClock;
    this.log = options.logger.child({ component: 'manager' });
    this.gracefulShutdownTimeoutMs = options.gracefulShutdownTimeoutMs ?? 30_000;
    this.cacheSyncTimeoutMs = options.cacheSyncTimeoutMs ?? 120_000;
    this.onLeadershipLost = options.onLeadershipLost ?? exitOnLeadershipLost;
    if (options.leaderElection) {
      this.elector = new LeaderElector(
        options.leaseClient ?? kubeLeaseClient(options.client),
        options.leaderElection,
        {
          logger: options.logger,
          registry: this.registry,
          clock: this.clock,
        },
      );
    }
  }

  /** This process's leader-election identity, or undefined without leader election. */
  get identity(): string | undefined {
    return this.elector?.identity;
  }

  /** Adds a runnable. After start() it starts at once if it may run now (not leader-only, or leading). */
  add(runnable: Runnable): void {
    if (this.runnables.some((r) => r.name === runnable.name)) {
      throw new Error(
        `manager: a runnable named ${runnable.name} was already added; names label metrics and logs`,
      );
    }
    if (this.state === 'stopping' || this.state === 'stopped') {
      throw new Error(`manager: cannot add ${runnable.name}, the manager is stopping`);
    }
    this.runnables.push(runnable);
    if (this.state === 'new') return;
    if (!runnable.needLeaderElection || this.leading) this.launch(runnable);
  }

  /** Starts everything; resolves once the caches are synced (not once leading). */
  async start(): Promise<void> {
    if (this.state !== 'new') throw new Error(`manager: start() called twice (state ${this.state})`);
    this.state = 'starting';
    for (const r of this.runnables) if (!r.needLeaderElection) this.launch(r);

    await this.cache.start();
    const syncTimeout = new AbortController();
    // Not a schedule: a deadline on this one cache sync.
    const timer = this.clock.setTimeout(() => syncTimeout.abort(), this.cacheSyncTimeoutMs);
    try {
      await this.cache.waitForSync(AbortSignal.any([syncTimeout.signal, this.electionAbort.signal]));
    } catch (e) {
      const why = syncTimeout.signal.aborted
        ? `the caches did not sync within ${this.cacheSyncTimeoutMs} ms: ${this.cache.health().reason ?? 'still listing'}`
        : `stopped while waiting for the caches to sync`;
      throw new Error(`manager: ${why}`, { cause: e });
    } finally {
      timer.cancel();
    }
    if (this.state !== 'starting') return;
    this.state = 'started';
    this.log.info('Caches synced');

    if (this.elector === undefined) {
      this.becomeLeader();
      return;
    }
    this.election = this.campaign(this.elector);
  }

  /** Resolves once this process leads (at once without leader election). */
  elected(): Promise<void> {
    if (this.leading) return Promise.resolve();
    return new Promise((resolve) => this.electedWaiters.push(resolve));
  }

  /** Stops every runnable (in-flight work gets the graceful timeout), releases the lease, stops the cache. */
  stop(): Promise<void> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  isLeader(): boolean {
    return this.leading;
  }

  /** The lease holder last observed (this process or another), undefined before the first read. */
  leader(): string | undefined {
    return this.elector === undefined ? undefined : this.elector.leader() || undefined;
  }

  /** Ready once the caches have synced, whether leading or standing by; not while stopping. */
  isReady(): boolean {
    return this.state === 'started' && this.cache.hasSynced();
  }

  /** Healthy unless an informer, a runnable (a wedged reconcile) or a runnable's start() failed. */
  health(): HealthStatus {
    const reasons: string[] = [];
    const cache = this.cache.health();
    if (!cache.healthy) reasons.push(cache.reason ?? 'the informer cache is unhealthy');
    for (const started of this.running) {
      if (started.finished) continue;
      const h = started.runnable.health?.();
      if (h && !h.healthy) reasons.push(h.reason ?? `${started.runnable.name} is unhealthy`);
    }
    for (const [name, why] of this.failures) reasons.push(`${name} failed: ${why}`);
    return reasons.length === 0 ? { healthy: true } : { healthy: false, reason: reasons.join('; ') };
  }

  private async campaign(elector: LeaderElector): Promise<void> {
    const outcome = await elector.run(this.electionAbort.signal, {
      onStartedLeading: () => this.becomeLeader(),
    });
    if (outcome !== 'lost') return;
    this.leading = false;
    // Everything that needed the lease stops now, mid-reconcile if need be: a standby may take over
    // as soon as the lease expires, and two writers must not overlap.
    const leaderOnly = this.running.filter((s) => s.runnable.needLeaderElection && !s.finished);
    for (const s of leaderOnly) {
      s.stop.abort(new Error('leadership lost'));
      s.cancel.abort(new Error('leadership lost'));
    }
    // Requests written while the apiserver could not be reached wait in the kernel's send queue, and
    // an ordinary close (or the exit) would still deliver them once the network returns, after a
    // standby took over: a reset drops them.
    const reset = this.client.resetConnections();
    this.log.error('Leadership lost; stopped every leader-only runnable', undefined, {
      runnables: leaderOnly.map((s) => s.runnable.name),
      connectionsReset: reset,
    });
    this.onLeadershipLost(this);
  }

  private becomeLeader(): void {
    if (this.state !== 'started') return;
    this.leading = true;
    this.log.info('Leading; starting leader-only runnables', { identity: this.elector?.identity });
    for (const r of this.runnables) if (r.needLeaderElection) this.launch(r);
    for (const w of this.electedWaiters.splice(0)) w();
  }

  private launch(runnable: Runnable): void {
    const stop = new AbortController();
    const cancel = new AbortController();
    const started: Started = { runnable, stop, cancel, finished: false, done: Promise.resolve() };
    started.done = (async () => {
      try {
        await runnable.start(stop.signal, cancel.signal);
        if (!stop.signal.aborted) {
          this.failures.set(runnable.name, 'it returned before it was asked to stop');
          this.log.error('Runnable returned before it was asked to stop', undefined, {
            runnable: runnable.name,
          });
        }
      } catch (e) {
        this.failures.set(runnable.name, e instanceof Error ? e.message : String(e));
        this.log.error('Runnable failed', e, { runnable: runnable.name });
      } finally {
        started.finished = true;
      }
    })();
    this.running.push(started);
  }

  private async shutdown(): Promise<void> {
    const wasStarted = this.state !== 'new';
    this.state = 'stopping';
    this.log.info('Stopping', { gracefulShutdownTimeoutMs: this.gracefulShutdownTimeoutMs });
    for (const s of this.running) s.stop.abort(new Error('manager stopping'));

    const deadline = new AbortController();
    const all = Promise.all(this.running.map((s) => s.done));
    const inTime = await Promise.race([
      all.then(() => true),
      sleep(this.clock, this.gracefulShutdownTimeoutMs, deadline.signal).then(() => false),
    ]);
    deadline.abort();
    if (!inTime) {
      const late = this.running.filter((s) => !s.finished).map((s) => s.runnable.name);
      this.log.warn('Graceful shutdown timed out; cancelling work still in flight', { runnables: late });
      for (const s of this.running) s.cancel.abort(new Error('graceful shutdown timed out'));
    }

    // The renewals continued while the work drained; only now is it safe to give the lease away.
    this.electionAbort.abort();
    await this.election;
    if (this.elector !== undefined) {
      if (inTime) await this.elector.release();
      else
        this.log.warn(
          'Not releasing the lease: work may still be running; a standby takes over once it expires',
        );
    }
    this.leading = false;
    if (wasStarted) await this.cache.stop();
    this.state = 'stopped';
    this.log.info('Stopped');
  }
}

function exitOnLeadershipLost(manager: Manager): void {
  manager.logger.error(
    'Leadership lost: exiting so that nothing this replica started keeps writing',
    undefined,
    {
      identity: manager.identity,
    },
  );
  process.exit(1);
}
