import { createLogger } from '@aro/observability';
import { Registry } from 'prom-client';
import { FakeClock, flushMicrotasks } from '../queue/clock';
import { type ElectionOutcome, LeaderElector, type LeaderElectionOptions, microTime } from './leader-elector';
import { InMemoryLeases } from './in-memory-leases';

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

    leases.cutOff.add('a');
    let outcome: ElectionOutcome | undefined;
    void a.outcome.then((o) => (outcome = o));
    await clock.advance(2_000 + 9_000);
    expect(outcome).toBeUndefined();
    expect(a.elector.isLeader()).toBe(true);
    await clock.advance(1_000);
    expect(outcome).toBe('lost');
    expect(a.elector.isLeader()).toBe(false);
    expect(await gauge(registryA)).toBe(0);

    // The standby saw a's last renewal about 12 s ago; it must wait out the rest of the 15 s.
    expect(b.elector.isLeader()).toBe(false);
    await clock.advance(6_000);
    expect(b.elector.isLeader()).toBe(true);
    expect(leases.read('ns', 'lock')!.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
    b.abort.abort();
  });

  it('keeps leading through failed renewals that recover before the deadline', async () => {
    const clock = new FakeClock();
    const leases = new InMemoryLeases();
    const a = candidate(leases, 'a', clock);
    await clock.advance(0);
    leases.cutOff.add('a');
    await clock.advance(8_000);
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
