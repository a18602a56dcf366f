import { createLogger } from '@aro/observability';
import { Registry } from 'prom-client';
import type { InformerCache } from '../cache';
import type { KubeClient } from '../client';
import { FakeClock, InMemoryLeases, flushMicrotasks } from '../testing';
import { Manager, type ManagerOptions } from './manager';
import type { HealthStatus, Runnable } from './runnable';

/** A cache whose sync the test completes by hand. */
class FakeCache {
  started = false;
  stopped = false;
  synced = false;
  healthy: HealthStatus = { healthy: true };
  private syncWaiters: Array<() => void> = [];

  async start(): Promise<void> {
    this.started = true;
  }
  async stop(): Promise<void> {
    this.stopped = true;
  }
  hasSynced(): boolean {
    return this.synced;
  }
  health(): HealthStatus {
    return this.healthy;
  }
  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.synced) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.syncWaiters.push(resolve);
      signal?.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
    });
  }
  sync(): void {
    this.synced = true;
    for (const w of this.syncWaiters.splice(0)) w();
  }
}

/** A runnable that records its life and finishes its in-flight work when the test says so. */
class RecordingRunnable implements Runnable {
  startedAt: number | undefined;
  stopRequested = false;
  cancelled = false;
  finished = false;
  private finishWork: (() => void) | undefined;
  readonly workDone: Promise<void>;

  constructor(
    readonly name: string,
    readonly needLeaderElection: boolean,
    private readonly clock: FakeClock,
    private readonly holdsWork = false,
  ) {
    this.workDone = new Promise((resolve) => (this.finishWork = resolve));
  }

  async start(stop: AbortSignal, cancel?: AbortSignal): Promise<void> {
    this.startedAt = this.clock.now();
    cancel?.addEventListener('abort', () => (this.cancelled = true), { once: true });
    await new Promise<void>((resolve) => stop.addEventListener('abort', () => resolve(), { once: true }));
    this.stopRequested = true;
    if (this.holdsWork) await Promise.race([this.workDone, abortOf(cancel)]);
    this.finished = true;
  }

  finish(): void {
    this.finishWork?.();
  }
}

function abortOf(signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal === undefined) return;
    if (signal.aborted) resolve();
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

interface Setup {
  manager: Manager;
  cache: FakeCache;
  clock: FakeClock;
  leases: InMemoryLeases;
  lost: number;
}

function setup(
  clock = new FakeClock(),
  leases = new InMemoryLeases(),
  identity = 'one',
  overrides: Partial<ManagerOptions> = {},
): Setup {
  const cache = new FakeCache();
  const s: Setup = { manager: undefined!, cache, clock, leases, lost: 0 };
  s.manager = new Manager({
    client: { resetConnections: () => 0 } as Partial<KubeClient> as KubeClient,
    cache: cache as unknown as InformerCache,
    logger: createLogger({ level: 'silent' }),
    registry: new Registry(),
    clock,
    leaderElection: {
      leaseName: 'aro-controller',
      leaseNamespace: 'system',
      identity,
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
      jitterFactor: 0,
    },
    leaseClient: leases.clientFor(identity),
    gracefulShutdownTimeoutMs: 30_000,
    onLeadershipLost: () => s.lost++,
    ...overrides,
  });
  return s;
}

describe('Manager', () => {
  it('starts non-leader runnables at once, leader runnables only after sync and election', async () => {
    const s = setup();
    const worker = new RecordingRunnable('metrics-pusher', false, s.clock);
    const controller = new RecordingRunnable('widgets', true, s.clock);
    s.manager.add(worker);
    s.manager.add(controller);
    const started = s.manager.start();
    await flushMicrotasks();
    expect(worker.startedAt).toBe(0);
    expect(s.cache.started).toBe(true);
    expect(controller.startedAt).toBeUndefined();
    expect(s.manager.isReady()).toBe(false);

    await s.clock.advance(500);
    s.cache.sync();
    await started;
    await s.clock.advance(0);
    expect(s.manager.isReady()).toBe(true);
    expect(s.manager.isLeader()).toBe(true);
    expect(controller.startedAt).toBe(500);
    expect(s.leases.read('system', 'aro-controller')!.spec!.holderIdentity).toBe('one');
    await s.manager.stop();
  });

  it('keeps a standby ready but idle while another replica leads', async () => {
    const clock = new FakeClock();
    const leases = new InMemoryLeases();
    const leader = setup(clock, leases, 'leader');
    const standby = setup(clock, leases, 'standby');
    const leaderController = new RecordingRunnable('widgets', true, clock);
    const standbyController = new RecordingRunnable('widgets', true, clock);
    leader.manager.add(leaderController);
    standby.manager.add(standbyController);
    leader.cache.sync();
    standby.cache.sync();
    await leader.manager.start();
    await clock.advance(0);
    await standby.manager.start();
    await clock.advance(60_000);

    expect(leader.manager.isLeader()).toBe(true);
    expect(standby.manager.isLeader()).toBe(false);
    expect(standby.manager.isReady()).toBe(true);
    expect(standbyController.startedAt).toBeUndefined();

    // A clean stop hands over within one retry period, not a lease duration.
    const stopping = leader.manager.stop();
    await clock.advance(0);
    await stopping;
    expect(leaderController.finished).toBe(true);
    await clock.advance(2_000);
    expect(standby.manager.isLeader()).toBe(true);
    expect(standbyController.startedAt).toBe(62_000);
    await standby.manager.stop();
  });

  it('on losing the lease stops and cancels every leader-only runnable at once and reports the loss', async () => {
    const s = setup();
    const worker = new RecordingRunnable('pool', false, s.clock);
    const controller = new RecordingRunnable('widgets', true, s.clock, true);
    s.manager.add(worker);
    s.manager.add(controller);
    s.cache.sync();
    await s.manager.start();
    await s.clock.advance(0);
    expect(controller.startedAt).toBe(0);

    // Renewed at 0 s: leadership ends renewDeadline (10 s) after that renewal started.
    s.leases.cutOff.add('one');
    await s.clock.advance(9_999);
    expect(s.lost).toBe(0);
    expect(controller.stopRequested).toBe(false);
    await s.clock.advance(1);
    expect(s.lost).toBe(1);
    expect(s.manager.isLeader()).toBe(false);
    expect(controller.stopRequested).toBe(true);
    expect(controller.cancelled).toBe(true);
    expect(controller.finished).toBe(true);
    expect(worker.stopRequested).toBe(false);
    await s.manager.stop();
    expect(worker.finished).toBe(true);
  });

  it('on stop lets work in flight finish before releasing the lease', async () => {
    const s = setup();
    const controller = new RecordingRunnable('widgets', true, s.clock, true);
    s.manager.add(controller);
    s.cache.sync();
    await s.manager.start();
    await s.clock.advance(0);

    let stopped = false;
    const stopping = s.manager.stop().then(() => (stopped = true));
    await s.clock.advance(20_000);
    expect(stopped).toBe(false);
    expect(controller.cancelled).toBe(false);
    // Renewals go on while the work drains, so no standby can take over meanwhile.
    expect(s.leases.read('system', 'aro-controller')!.spec!.holderIdentity).toBe('one');
    expect(s.manager.isReady()).toBe(false);

    controller.finish();
    await s.clock.advance(0);
    await stopping;
    expect(s.leases.read('system', 'aro-controller')!.spec!.holderIdentity).toBeUndefined();
    expect(s.cache.stopped).toBe(true);
  });

  it('cancels work still running at the shutdown deadline and leaves the lease to expire', async () => {
    const s = setup();
    const controller = new RecordingRunnable('widgets', true, s.clock, true);
    s.manager.add(controller);
    s.cache.sync();
    await s.manager.start();
    await s.clock.advance(0);

    const stopping = s.manager.stop();
    await s.clock.advance(30_000);
    await stopping;
    expect(controller.cancelled).toBe(true);
    expect(s.leases.read('system', 'aro-controller')!.spec!.holderIdentity).toBe('one');
  });

  it('runs leader runnables at once without leader election', async () => {
    const s = setup(new FakeClock(), new InMemoryLeases(), 'x', { leaderElection: false });
    const controller = new RecordingRunnable('widgets', true, s.clock);
    s.manager.add(controller);
    s.cache.sync();
    await s.manager.start();
    expect(s.manager.isLeader()).toBe(true);
    expect(controller.startedAt).toBe(0);
    await s.manager.stop();
    expect(controller.finished).toBe(true);
  });

  it('fails start when the caches do not sync in time, naming the cause', async () => {
    const s = setup(new FakeClock(), new InMemoryLeases(), 'x', { cacheSyncTimeoutMs: 1000 });
    s.cache.healthy = { healthy: false, reason: 'informer for pods: forbidden' };
    const started = s.manager.start();
    const failure = expect(started).rejects.toThrow(
      /did not sync within 1000 ms: informer for pods: forbidden/,
    );
    await s.clock.advance(1000);
    await failure;
  });

  it('reports unhealthy for a sick cache, a sick runnable, or a runnable that died', async () => {
    const s = setup(new FakeClock(), new InMemoryLeases(), 'x', { leaderElection: false });
    const sick: Runnable = {
      name: 'sick',
      needLeaderElection: false,
      start: (stop) => new Promise((resolve) => stop.addEventListener('abort', () => resolve())),
      health: () => ({ healthy: false, reason: 'reconcile of ns/a stuck' }),
    };
    const dying: Runnable = {
      name: 'dying',
      needLeaderElection: false,
      start: async () => {
        throw new Error('boom');
      },
    };
    s.manager.add(sick);
    s.manager.add(dying);
    s.cache.healthy = { healthy: false, reason: 'informer for pods is quiet' };
    s.cache.sync();
    await s.manager.start();
    await flushMicrotasks();
    const health = s.manager.health();
    expect(health.healthy).toBe(false);
    expect(health.reason).toContain('informer for pods is quiet');
    expect(health.reason).toContain('reconcile of ns/a stuck');
    expect(health.reason).toContain('dying failed: boom');
    await s.manager.stop();
  });

  it('refuses two runnables with one name', () => {
    const s = setup();
    s.manager.add(new RecordingRunnable('widgets', true, s.clock));
    expect(() => s.manager.add(new RecordingRunnable('widgets', true, s.clock))).toThrow(/already added/);
  });

  it('starts a non-leader runnable added while the caches sync', async () => {
    const s = setup();
    const starting = s.manager.start();
    await flushMicrotasks();
    const pool = new RecordingRunnable('pool', false, s.clock);
    const controller = new RecordingRunnable('widgets', true, s.clock);
    s.manager.add(pool);
    s.manager.add(controller);
    expect(pool.startedAt).toBe(0);
    expect(controller.startedAt).toBeUndefined();
    s.cache.sync();
    await starting;
    await s.manager.elected();
    expect(controller.startedAt).toBe(0);
    await s.manager.stop();
  });

  it('starts a runnable added after start once it may run', async () => {
    const s = setup(new FakeClock(), new InMemoryLeases(), 'x', { leaderElection: false });
    s.cache.sync();
    await s.manager.start();
    const late = new RecordingRunnable('late', true, s.clock);
    s.manager.add(late);
    expect(late.startedAt).toBe(0);
    await s.manager.stop();
  });
});
