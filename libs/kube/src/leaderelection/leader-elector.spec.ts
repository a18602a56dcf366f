import { createLogger } from '@aro/observability';
import { Registry } from 'prom-client';
import { FakeClock, InMemoryLeases, flushMicrotasks } from '../testing';
import { type ElectionOutcome, LeaderElector, type LeaderElectionOptions, microTime } from './leader-elector';
import type { Lease, LeaseClient } from './lease-client';

const timings: Partial<LeaderElectionOptions> = {
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
};

interface Candidate {
  elector: LeaderElector;
  abort: AbortController;
  outcome: Promise<ElectionOutcome>;
  startedLeading: boolean;
  leaders: string[];
}

function candidate(
  leases: InMemoryLeases,
  identity: string,
  clock: FakeClock,
  registry = new Registry(),
  overrides: Partial<LeaderElectionOptions> = {},
): Candidate {
  const elector = new LeaderElector(
    leases.clientFor(identity),
    { leaseName: 'lock', leaseNamespace: 'ns', identity, ...timings, ...overrides },
    {
      logger: createLogger({ level: process.env.DEBUG_LE ? 'debug' : 'silent' }),
      clock,
      registry,
      random: () => 0,
    },
  );
  const abort = new AbortController();
  const c: Candidate = { elector, abort, startedLeading: false, leaders: [], outcome: undefined! };
  c.outcome = elector.run(abort.signal, {
    onStartedLeading: () => (c.startedLeading = true),
    onNewLeader: (id) => c.leaders.push(id),
  });
  return c;
}

async function gauge(registry: Registry): Promise<number | undefined> {
  const data = await registry.getSingleMetric('leader_election_master_status')!.get();
  return data.values.find((v) => v.labels.name === 'lock')?.value;
}

describe('LeaderElector', () => {
  it('creates the lease when there is none and leads', async () => {
    const clock = new FakeClock();
    const leases = new InMemoryLeases();
    const registry = new Registry();
    const a = candidate(leases, 'a', clock, registry);
    await clock.advance(0);

    expect(a.startedLeading).toBe(true);
    expect(a.elector.isLeader()).toBe(true);
    const spec = leases.read('ns', 'lock')!.spec!;
    expect(spec).toMatchObject({ holderIdentity: 'a', leaseDurationSeconds: 15, leaseTransitions: 0 });
    expect(spec.renewTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(await gauge(registry)).toBe(1);
    a.abort.abort();
    await expect(a.outcome).resolves.toBe('cancelled');
  });

  it('counts leader_election_slowpath_total only for a renewal that finds the lease changed under it', async () => {
    const clock = new FakeClock();
    const leases = new InMemoryLeases();
    const registry = new Registry();
    const a = candidate(leases, 'a', clock, registry);
    const slowpath = async () =>
      (await registry.getSingleMetric('leader_election_slowpath_total')!.get()).values.find(
        (v) => v.labels.name === 'lock',
      )?.value ?? 0;
    await clock.advance(0);
    await clock.advance(10_000);
    expect(a.elector.isLeader()).toBe(true);
    expect(await slowpath()).toBe(0);

    // Another writer touches the lease (still held by a): client-go's optimistic renewal would fail.
    leases.put('ns', 'lock', { ...leases.read('ns', 'lock')!.spec });
    await clock.advance(2_000);
    expect(a.elector.isLeader()).toBe(true);
    expect(await slowpath()).toBe(1);
    await clock.advance(6_000);
    expect(await slowpath()).toBe(1);
    a.abort.abort();
    await a.outcome;
  });

  it('lets exactly one of two candidates lead', async () => {
    const clock = new FakeClock();
    const leases = new InMemoryLeases();
    const a = candidate(leases, 'a', clock);
    const b = candidate(leases, 'b', clock);
    await clock.advance(30_000);

    expect([a.elector.isLeader(), b.elector.isLeader()].filter(Boolean)).toHaveLength(1);
    const leader = a.elector.isLeader() ? 'a' : 'b';
    expect(leases.read('ns', 'lock')!.spec!.holderIdentity).toBe(leader);
    expect(b.leaders).toEqual([leader]);
    a.abort.abort();
    b.abort.abort();
  });

  it('renews the lease every retry period, keeping acquireTime and advancing renewTime', async () => {
    const clock = new FakeClock();
    const leases = new InMemoryLeases();
    const a = candidate(leases, 'a', clock);
    await clock.advance(0);
    const first = leases.read('ns', 'lock')!.spec!;
    await clock.advance(2_000);
    const second = leases.read('ns', 'lock')!.spec!;
    expect(second.acquireTime).toBe(first.acquireTime);
    expect(second.renewTime).toBe(microTime(clock.wallTime()));
    expect(second.renewTime).not.toBe(first.renewTime);
    a.abort.abort();
  });

  it('does not take a lease another holder keeps renewing', async () => {
    const clock = new FakeClock();
    const leases = new InMemoryLeases();
    const a = candidate(leases, 'a', clock);
    await clock.advance(0);
    const b = candidate(leases, 'b', clock);
    await clock.advance(120_000);
    expect(a.elector.isLeader()).toBe(true);
    expect(b.elector.isLeader()).toBe(false);
    expect(b.startedLeading).toBe(false);
    a.abort.abort();
    b.abort.abort();
  });

  it('treats a stale lease as held until it has seen it unchanged for leaseDuration on its own clock', async () => {
    const clock = new FakeClock();
    const leases = new InMemoryLeases();
    // Written by a holder whose clock was far behind: by timestamps it expired long ago.
    leases.put('ns', 'lock', {
      holderIdentity: 'ghost',
      leaseDurationSeconds: 15,
      acquireTime: '2000-01-01T00:00:00.000000Z',
      renewTime: '2000-01-01T00:00:00.000000Z',
      leaseTransitions: 4,
    });
    const b = candidate(leases, 'b', clock);
    await clock.advance(14_000);
    expect(b.elector.isLeader()).toBe(false);
    expect(leases.read('ns', 'lock')!.spec!.holderIdentity).toBe('ghost');

    await clock.advance(2_000);
    expect(b.elector.isLeader()).toBe(true);
    expect(leases.read('ns', 'lock')!.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 5 });
    b.abort.abort();
  });

  it('restarts the observed time whenever the lease changes', async () => {
    const clock = new FakeClock();
    const leases = new InMemoryLeases();
    leases.put('ns', 'lock', {
      holderIdentity: 'other',
      leaseDurationSeconds: 15,
      renewTime: 't0',
      leaseTransitions: 0,
    });
    const b = candidate(leases, 'b', clock);
    await clock.advance(10_000);
    leases.put('ns', 'lock', {
      holderIdentity: 'other',
      leaseDurationSeconds: 15,
      renewTime: 't1',
      leaseTransitions: 0,
    });
    await clock.advance(10_000);
    // 20 s after the first sighting, but only ~10 s since the record last changed.
    expect(b.elector.isLeader()).toBe(false);
    await clock.advance(8_000);
    expect(b.elector.isLeader()).toBe(true);
    b.abort.abort();
  });

  it('loses leadership when no renewal succeeds within renewDeadline, and a standby takes over', async () => {
    const clock = new FakeClock();
    const leases = new InMemoryLeases();
    const registryA = new Registry();
    const a = candidate(leases, 'a', clock, registryA);
    await clock.advance(0);
    const b = candidate(leases, 'b', clock);
    await clock.advance(4_000);

    // a's last renewal started at 4 s; its deadline is 10 s from then, not from the next attempt at 6 s.
    leases.cutOff.add('a');
    let outcome: ElectionOutcome | undefined;
    void a.outcome.then((o) => (outcome = o));
    await clock.advance(9_000);
    expect(outcome).toBeUndefined();
    expect(a.elector.isLeader()).toBe(true);
    await clock.advance(1_000);
    expect(outcome).toBe('lost');
    expect(a.elector.isLeader()).toBe(false);
    expect(await gauge(registryA)).toBe(0);

    // The standby saw a's last renewal 10 s ago; it must wait out the rest of the 15 s.
    expect(b.elector.isLeader()).toBe(false);
    await clock.advance(4_000);
    expect(b.elector.isLeader()).toBe(false);
    await clock.advance(2_000);
    expect(b.elector.isLeader()).toBe(true);
    expect(leases.read('ns', 'lock')!.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
    b.abort.abort();
  });

  it('stops leading before a standby may take over when retryPeriod + renewDeadline exceeds the lease', async () => {
    // Timings the elector accepts (renewDeadline under leaseDuration) where counting the deadline from
    // the next attempt would lead 2 + 7 = 9 s past the last renewal, on an 8 s lease.
    const terms = { leaseDurationMs: 8_000, renewDeadlineMs: 7_000, retryPeriodMs: 2_000 };
    const clock = new FakeClock();
    const leases = new InMemoryLeases();
    const a = candidate(leases, 'a', clock, new Registry(), terms);
    await clock.advance(0);
    const b = candidate(leases, 'b', clock, new Registry(), terms);
    await clock.advance(4_000);
    leases.cutOff.add('a');
    const both: number[] = [];
    for (let t = 0; t < 20_000; t += 100) {
      await clock.advance(100);
      if (a.elector.isLeader() && b.elector.isLeader()) both.push(t);
    }
    expect(both).toEqual([]);
    expect(a.elector.isLeader()).toBe(false);
    expect(b.elector.isLeader()).toBe(true);
    b.abort.abort();
  });

  it('keeps leading through failed renewals that recover before the deadline', async () => {
    const clock = new FakeClock();
    const leases = new InMemoryLeases();
    const a = candidate(leases, 'a', clock);
    await clock.advance(0);
    // Renewed at 0 s; the attempts at 2, 4 and 6 s fail, the one at 8 s (under the 10 s deadline) succeeds.
    leases.cutOff.add('a');
    await clock.advance(7_000);
    leases.cutOff.delete('a');
    let outcome: ElectionOutcome | undefined;
    void a.outcome.then((o) => (outcome = o));
    await clock.advance(30_000);
    expect(outcome).toBeUndefined();
    expect(a.elector.isLeader()).toBe(true);
    a.abort.abort();
  });

  it('hands the lease over at once on release', async () => {
    const clock = new FakeClock();
    const leases = new InMemoryLeases();
    const a = candidate(leases, 'a', clock);
    await clock.advance(0);
    const b = candidate(leases, 'b', clock);
    await clock.advance(4_000);

    a.abort.abort();
    await expect(a.outcome).resolves.toBe('cancelled');
    expect(a.elector.isLeader()).toBe(true);
    await a.elector.release();
    expect(a.elector.isLeader()).toBe(false);
    expect(leases.read('ns', 'lock')!.spec!.holderIdentity).toBeUndefined();

    // The next attempt, one retry period later, not a lease duration later.
    await clock.advance(2_000);
    expect(b.elector.isLeader()).toBe(true);
    expect(leases.read('ns', 'lock')!.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
    b.abort.abort();
  });

  it('does not release a lease that has since moved to another holder', async () => {
    const clock = new FakeClock();
    const leases = new InMemoryLeases();
    const a = candidate(leases, 'a', clock);
    await clock.advance(0);
    a.abort.abort();
    await a.outcome;
    leases.put('ns', 'lock', { holderIdentity: 'usurper', leaseDurationSeconds: 15, leaseTransitions: 1 });
    await a.elector.release();
    expect(leases.read('ns', 'lock')!.spec!.holderIdentity).toBe('usurper');
  });

  it('gives up a renewal that hangs once renewDeadline has passed', async () => {
    const clock = new FakeClock();
    const leases = new InMemoryLeases();
    const hanging = leases.clientFor('a');
    let hang = false;
    const elector = new LeaderElector(
      {
        get: (ns, name) => (hang ? new Promise<never>(() => {}) : hanging.get(ns, name)),
        create: (l) => hanging.create(l),
        replace: (l) => hanging.replace(l),
      },
      { leaseName: 'lock', leaseNamespace: 'ns', identity: 'a', ...timings },
      { logger: createLogger({ level: 'silent' }), clock, registry: new Registry(), random: () => 0 },
    );
    let outcome: ElectionOutcome | undefined;
    void elector.run(new AbortController().signal, { onStartedLeading: () => {} }).then((o) => (outcome = o));
    await clock.advance(0);
    hang = true;
    await clock.advance(2_000 + 10_000);
    await flushMicrotasks();
    expect(outcome).toBe('lost');
  });

  it('refuses timings where a standby could take over before the leader notices it has lost', () => {
    expect(
      () =>
        new LeaderElector(
          new InMemoryLeases().clientFor('a'),
          { leaseName: 'lock', leaseNamespace: 'ns', leaseDurationMs: 10_000, renewDeadlineMs: 10_000 },
          { logger: createLogger({ level: 'silent' }), registry: new Registry() },
        ),
    ).toThrow(/leaseDuration .* must exceed renewDeadline/);
  });

  it('writes MicroTime with six fractional digits', () => {
    expect(microTime(new Date('2025-03-04T05:06:07.891Z'))).toBe('2025-03-04T05:06:07.891000Z');
  });
});

/**
 * The lease API as several candidates see it, with two things the plain store cannot do: hold reads
 * until every racing candidate has read (so all of them act on the same record), then let their writes
 * through one at a time in a chosen order; and keep a log of every write and what the server answered.
 */
class RaceTrack {
  readonly writes: Array<{ by: string; holder: string | undefined; ok: boolean; error?: string }> = [];
  private race: { order: string[]; held: Map<string, () => void> } | undefined;
  private readonly settled = new Map<string, () => void>();

  constructor(private readonly leases: InMemoryLeases) {}

  view(by: string): LeaseClient {
    const inner = this.leases.clientFor(by);
    return {
      get: async (namespace, name) => {
        const lease = await inner.get(namespace, name);
        const race = this.race;
        if (race !== undefined && race.order.includes(by) && !race.held.has(by)) {
          await new Promise<void>((resolve) => {
            race.held.set(by, resolve);
            if (race.held.size === race.order.length) void this.release(race);
          });
        }
        return lease;
      },
      create: (lease) => this.write(by, lease, () => inner.create(lease)),
      replace: (lease) => this.write(by, lease, () => inner.replace(lease)),
    };
  }

  /** The next read of each of `order` waits until all have read; then each writes, in this order. */
  raceNext(order: string[]): void {
    this.race = { order, held: new Map() };
  }

  successfulWritesBy(by: string): number {
    return this.writes.filter((w) => w.by === by && w.ok).length;
  }

  private async release(race: { order: string[]; held: Map<string, () => void> }): Promise<void> {
    this.race = undefined;
    for (const by of race.order) {
      const written = new Promise<void>((resolve) => this.settled.set(by, resolve));
      race.held.get(by)!();
      await written;
    }
  }

  private async write(by: string, lease: Lease, send: () => Promise<Lease>): Promise<Lease> {
    try {
      const written = await send();
      this.writes.push({ by, holder: lease.spec?.holderIdentity, ok: true });
      return written;
    } catch (e) {
      this.writes.push({ by, holder: lease.spec?.holderIdentity, ok: false, error: String(e) });
      throw e;
    } finally {
      this.settled.get(by)?.();
      this.settled.delete(by);
    }
  }
}

function racer(track: RaceTrack, identity: string, clock: FakeClock): Candidate {
  const elector = new LeaderElector(
    track.view(identity),
    { leaseName: 'lock', leaseNamespace: 'ns', identity, ...timings },
    {
      logger: createLogger({ level: process.env.DEBUG_LE ? 'debug' : 'silent' }),
      clock,
      registry: new Registry(),
      random: () => 0,
    },
  );
  const abort = new AbortController();
  const c: Candidate = { elector, abort, startedLeading: false, leaders: [], outcome: undefined! };
  c.outcome = elector.run(abort.signal, {
    onStartedLeading: () => (c.startedLeading = true),
    onNewLeader: (id) => c.leaders.push(id),
  });
  return c;
}

function leadersAmong(...candidates: Candidate[]): string[] {
  return candidates.filter((c) => c.elector.isLeader()).map((c) => c.elector.identity);
}

describe('LeaderElector under a write race', () => {
  it.each([
    ['a', 'b'],
    ['b', 'a'],
  ])(
    'two candidates read the same expired lease and both write: %s wins, %s gets Conflict and stands by',
    async (winnerId, loserId) => {
      const clock = new FakeClock();
      const leases = new InMemoryLeases();
      leases.put('ns', 'lock', { holderIdentity: 'ghost', leaseDurationSeconds: 15, leaseTransitions: 4 });
      const track = new RaceTrack(leases);
      const candidates = { a: racer(track, 'a', clock), b: racer(track, 'b', clock) };
      const winner = candidates[winnerId as 'a' | 'b'];
      const loser = candidates[loserId as 'a' | 'b'];

      // Both first saw the ghost's lease at 0; at 16 s both have seen it unchanged for 15 s.
      await clock.advance(14_000);
      expect(leadersAmong(winner, loser)).toEqual([]);
      track.raceNext([winnerId, loserId]);
      await clock.advance(2_000);

      expect(track.writes).toEqual([
        { by: winnerId, holder: winnerId, ok: true },
        { by: loserId, holder: loserId, ok: false, error: expect.stringContaining('(Conflict)') },
      ]);
      expect(leadersAmong(winner, loser)).toEqual([winnerId]);
      expect(leases.read('ns', 'lock')!.spec).toMatchObject({
        holderIdentity: winnerId,
        leaseTransitions: 5,
      });

      // The winner renews for a minute; the holder never changes and the loser never writes again.
      for (let t = 0; t < 60_000; t += 1_000) {
        await clock.advance(1_000);
        expect(leadersAmong(winner, loser)).toEqual([winnerId]);
        expect(leases.read('ns', 'lock')!.spec!.holderIdentity).toBe(winnerId);
      }
      expect(track.successfulWritesBy(winnerId)).toBeGreaterThanOrEqual(30);
      expect(track.successfulWritesBy(loserId)).toBe(0);
      expect(track.writes.filter((w) => w.ok).every((w) => w.holder === winnerId)).toBe(true);
      expect(loser.startedLeading).toBe(false);
      expect(loser.leaders).toEqual(['ghost', winnerId]);
      winner.abort.abort();
      loser.abort.abort();
    },
  );

  it('two candidates that both find no lease and both create it: one leads, the other gets AlreadyExists and stands by', async () => {
    const clock = new FakeClock();
    const leases = new InMemoryLeases();
    const track = new RaceTrack(leases);
    track.raceNext(['a', 'b']);
    const a = racer(track, 'a', clock);
    const b = racer(track, 'b', clock);
    await clock.advance(0);

    expect(track.writes).toEqual([
      { by: 'a', holder: 'a', ok: true },
      { by: 'b', holder: 'b', ok: false, error: expect.stringContaining('(AlreadyExists)') },
    ]);
    expect(leadersAmong(a, b)).toEqual(['a']);
    // The loser learns who won from the read after its failed write, not a retry period later.
    expect(b.leaders).toEqual(['a']);
    for (let t = 0; t < 30_000; t += 1_000) {
      await clock.advance(1_000);
      expect(leadersAmong(a, b)).toEqual(['a']);
      expect(leases.read('ns', 'lock')!.spec!.holderIdentity).toBe('a');
    }
    expect(track.successfulWritesBy('b')).toBe(0);
    a.abort.abort();
    b.abort.abort();
  });

  /*
   * The leader's monotonic clock stood still while the standby's ran on (a suspended VM: Linux's
   * CLOCK_MONOTONIC does not count suspend). On waking the leader thinks it renewed 2 s ago and renews,
   * at the moment the standby, which has seen the lease unchanged for 15 s, takes it over.
   */
  async function renewalMeetsTakeover(order: ['a' | 'b', 'a' | 'b']) {
    const clockA = new FakeClock();
    const clockB = new FakeClock();
    const leases = new InMemoryLeases();
    const track = new RaceTrack(leases);
    const a = racer(track, 'a', clockA);
    await clockA.advance(0);
    const b = racer(track, 'b', clockB);
    for (let t = 0; t < 4_000; t += 2_000) {
      await clockA.advance(2_000);
      await clockB.advance(2_000);
    }
    expect(leadersAmong(a, b)).toEqual(['a']);

    // a is suspended. b last saw the lease change at 4 s and takes it at 20 s by its clock.
    await clockB.advance(15_999);
    expect(leadersAmong(a, b)).toEqual(['a']);
    track.raceNext(order);
    await clockB.advance(1);
    // a wakes: its renewal reads the same record b read, and both write.
    await clockA.advance(2_000);
    expect(track.writes.slice(-2)).toEqual([
      { by: order[0], holder: order[0], ok: true },
      { by: order[1], holder: order[1], ok: false, error: expect.stringContaining('(Conflict)') },
    ]);
    return { a, b, leases, track, clockA, clockB };
  }

  it('a renewal that loses to a takeover ends leadership at once, and the old leader never writes again', async () => {
    const { a, b, leases, track, clockA, clockB } = await renewalMeetsTakeover(['b', 'a']);
    expect(leadersAmong(a, b)).toEqual(['b']);
    await expect(a.outcome).resolves.toBe('lost');
    const writesByA = track.successfulWritesBy('a');
    for (let t = 0; t < 60_000; t += 1_000) {
      await clockA.advance(1_000);
      await clockB.advance(1_000);
      expect(leadersAmong(a, b)).toEqual(['b']);
      expect(leases.read('ns', 'lock')!.spec!.holderIdentity).toBe('b');
    }
    expect(track.successfulWritesBy('a')).toBe(writesByA);
    expect(leases.read('ns', 'lock')!.spec!.leaseTransitions).toBe(1);
    b.abort.abort();
  });

  it('a takeover that loses to a renewal leaves the leader leading and the standby standing by', async () => {
    const { a, b, leases, track, clockA, clockB } = await renewalMeetsTakeover(['a', 'b']);
    expect(leadersAmong(a, b)).toEqual(['a']);
    for (let t = 0; t < 60_000; t += 1_000) {
      await clockA.advance(1_000);
      await clockB.advance(1_000);
      expect(leadersAmong(a, b)).toEqual(['a']);
      expect(leases.read('ns', 'lock')!.spec!.holderIdentity).toBe('a');
    }
    expect(track.successfulWritesBy('b')).toBe(0);
    expect(b.startedLeading).toBe(false);
    expect(leases.read('ns', 'lock')!.spec!.leaseTransitions).toBe(0);
    a.abort.abort();
    b.abort.abort();
  });
});

describe('LeaderElector after a renewal deadline', () => {
  it('does not write the lease from an attempt abandoned at its deadline whose read answers late', async () => {
    const clock = new FakeClock();
    const leases = new InMemoryLeases();
    const track = new RaceTrack(leases);
    const direct = track.view('a');
    // While `stalled`, a's reads wait for the test; released, they read the lease as it is then.
    let stalled: Array<() => void> | undefined;
    const slowReads: LeaseClient = {
      get: async (namespace, name) => {
        const queue = stalled;
        if (queue !== undefined) await new Promise<void>((resolve) => queue.push(resolve));
        return direct.get(namespace, name);
      },
      create: (l) => direct.create(l),
      replace: (l) => direct.replace(l),
    };
    const elector = new LeaderElector(
      slowReads,
      { leaseName: 'lock', leaseNamespace: 'ns', identity: 'a', ...timings },
      { logger: createLogger({ level: 'silent' }), clock, registry: new Registry(), random: () => 0 },
    );
    let outcome: ElectionOutcome | undefined;
    void elector.run(new AbortController().signal, { onStartedLeading: () => {} }).then((o) => (outcome = o));
    await clock.advance(0);
    expect(elector.isLeader()).toBe(true);

    const held: Array<() => void> = [];
    stalled = held;
    await clock.advance(2_000 + 10_000);
    expect(outcome).toBe('lost');
    const writesWhenLost = track.successfulWritesBy('a');
    const leaseWhenLost = leases.read('ns', 'lock');

    // The reads answer now, long after the elector gave up on them.
    stalled = undefined;
    expect(held.length).toBeGreaterThan(0);
    held.forEach((answer) => answer());
    await flushMicrotasks();
    expect(track.successfulWritesBy('a')).toBe(writesWhenLost);
    expect(leases.read('ns', 'lock')).toEqual(leaseWhenLost);
  });
});
