import { FakeClock } from '@aro/kube/testing';
import {
  LeaderElector,
  LeaseKind,
  isConflict,
  kubeLeaseClient,
  type ElectionOutcome,
  type KubeClient,
  type Lease,
  type LeaseClient,
} from '@aro/kube';
import { Registry } from 'prom-client';
import { createTestNamespace, waitFor } from '../../harness';
import { adminClient, testLogger } from './support';

/*
 * Two leader electors racing on one real Lease. Each elector runs on a FakeClock of its own, so the test
 * decides when each one acts (and can stop one's clock, as a suspended VM's monotonic clock stops),
 * while every read and write goes to the real API server, whose resourceVersion check decides the race.
 * Reads can be held until both candidates have read, so both write with the same resourceVersion.
 */

interface WriteRecord {
  by: string;
  holder: string | undefined;
  ok: boolean;
  conflict: boolean;
}

class RaceTrack {
  readonly writes: WriteRecord[] = [];
  private inFlight = 0;
  private race: { racers: string[]; order?: string[]; held: Map<string, () => void> } | undefined;
  private readonly settled = new Map<string, () => void>();

  constructor(private readonly leases: LeaseClient) {}

  view(by: string): LeaseClient {
    return {
      get: (namespace, name) =>
        this.track(async () => {
          const lease = await this.leases.get(namespace, name);
          const race = this.race;
          if (race !== undefined && race.racers.includes(by) && !race.held.has(by)) {
            await new Promise<void>((resolve) => {
              race.held.set(by, resolve);
              if (race.held.size === race.racers.length) {
                this.race = undefined;
                void this.release(race);
              }
            });
          }
          return lease;
        }),
      create: (lease) => this.write(by, lease, () => this.leases.create(lease)),
      replace: (lease) => this.write(by, lease, () => this.leases.replace(lease)),
    };
  }

  /**
   * The next read of each racer is held until all of them have read. Then all write at once and the
   * server picks the winner; or, given an `order`, one after the other, each once the previous write
   * has been answered.
   */
  raceNext(racers: string[], order?: string[]): void {
    this.race = { racers, order, held: new Map() };
  }

  waiting(by: string): boolean {
    return this.race?.held.has(by) ?? false;
  }

  /** No lease call is in flight. */
  quiet(): boolean {
    return this.inFlight === 0;
  }

  successfulWritesBy(by: string): number {
    return this.writes.filter((w) => w.by === by && w.ok).length;
  }

  private async release(race: { order?: string[]; held: Map<string, () => void> }): Promise<void> {
    if (race.order === undefined) {
      for (const release of race.held.values()) release();
      return;
    }
    for (const by of race.order) {
      const written = new Promise<void>((resolve) => this.settled.set(by, resolve));
      race.held.get(by)!();
      await written;
    }
  }

  private async track<T>(call: () => Promise<T>): Promise<T> {
    this.inFlight++;
    try {
      return await call();
    } finally {
      this.inFlight--;
    }
  }

  private write(by: string, lease: Lease, send: () => Promise<Lease>): Promise<Lease> {
    return this.track(async () => {
      try {
        const written = await send();
        this.writes.push({ by, holder: lease.spec?.holderIdentity, ok: true, conflict: false });
        return written;
      } catch (e) {
        this.writes.push({ by, holder: lease.spec?.holderIdentity, ok: false, conflict: isConflict(e) });
        throw e;
      } finally {
        this.settled.get(by)?.();
        this.settled.delete(by);
      }
    });
  }
}

interface Candidate {
  identity: string;
  elector: LeaderElector;
  clock: FakeClock;
  abort: AbortController;
  outcome: ElectionOutcome | undefined;
  startedLeading: boolean;
}

function candidate(track: RaceTrack, namespace: string, identity: string): Candidate {
  const clock = new FakeClock();
  const elector = new LeaderElector(
    track.view(identity),
    {
      leaseName: 'race',
      leaseNamespace: namespace,
      identity,
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
    },
    { logger: testLogger(), clock, registry: new Registry(), random: () => 0 },
  );
  const abort = new AbortController();
  const c: Candidate = { identity, elector, clock, abort, outcome: undefined, startedLeading: false };
  void elector
    .run(abort.signal, { onStartedLeading: () => (c.startedLeading = true) })
    .then((o) => (c.outcome = o));
  return c;
}

function leaders(...candidates: Candidate[]): string[] {
  return candidates.filter((c) => c.elector.isLeader()).map((c) => c.identity);
}

describe('leader election racing on a real Lease', () => {
  let admin: KubeClient;
  const running: Candidate[] = [];

  beforeAll(() => {
    admin = adminClient();
  });
  afterEach(() => {
    for (const c of running.splice(0)) c.abort.abort();
  });
  afterAll(() => admin.close());

  async function holder(namespace: string): Promise<string | undefined> {
    return (await admin.get<Lease>(LeaseKind, namespace, 'race')).spec?.holderIdentity;
  }

  /**
   * Moves each clock given in turn, each time waiting until every lease call it started has been
   * answered, so one candidate's renewal has landed before the other reads.
   */
  async function step(track: RaceTrack, ms: number, ...clocks: FakeClock[]): Promise<void> {
    for (const clock of clocks) {
      await clock.advance(ms);
      await waitFor(() => track.quiet(), { description: 'the electors’ lease calls to be answered' });
    }
  }

  it('two candidates that read the same expired lease and both write: one leads, the other gets Conflict and never writes', async () => {
    const ns = await createTestNamespace('le-race-acquire');
    await admin.create<Lease>(LeaseKind, {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { namespace: ns, name: 'race' },
      spec: { holderIdentity: 'ghost', leaseDurationSeconds: 1, leaseTransitions: 4 },
    });
    const track = new RaceTrack(kubeLeaseClient(admin));
    const a = candidate(track, ns, 'a');
    const b = candidate(track, ns, 'b');
    running.push(a, b);
    await waitFor(() => a.elector.leader() === 'ghost' && b.elector.leader() === 'ghost' && track.quiet(), {
      description: 'both candidates to have seen the ghost holding the lease',
    });
    expect(leaders(a, b)).toEqual([]);

    // 2 s later both have seen the 1 s lease unchanged for its duration; both read it, then both write.
    track.raceNext(['a', 'b']);
    await a.clock.advance(2_000);
    await b.clock.advance(2_000);
    await waitFor(() => track.quiet(), { description: 'both candidates’ writes to be answered' });

    const race = track.writes.slice(0, 2);
    expect(race.map((w) => w.by).sort()).toEqual(['a', 'b']);
    const won = race.find((w) => w.ok);
    const lost = race.find((w) => !w.ok);
    expect(won).toBeDefined();
    expect(lost).toMatchObject({ conflict: true });
    const [winner, loser] = won!.by === 'a' ? [a, b] : [b, a];
    expect(leaders(a, b)).toEqual([winner.identity]);
    expect(await holder(ns)).toBe(winner.identity);

    // The winner renews ten times; the holder never changes and the loser never writes again.
    for (let i = 0; i < 10; i++) {
      await step(track, 2_000, a.clock, b.clock);
      expect(leaders(a, b)).toEqual([winner.identity]);
      expect(await holder(ns)).toBe(winner.identity);
    }
    expect(track.successfulWritesBy(winner.identity)).toBe(11);
    expect(track.successfulWritesBy(loser.identity)).toBe(0);
    expect(loser.startedLeading).toBe(false);
    const final = await admin.get<Lease>(LeaseKind, ns, 'race');
    expect(final.spec).toMatchObject({ holderIdentity: winner.identity, leaseTransitions: 5 });
  });

  it.each([
    ['the takeover lands first', ['b', 'a']],
    ['the renewal lands first', ['a', 'b']],
    ['the server picks', undefined],
  ])(
    'a renewal racing a takeover after the lease expired (%s): exactly one leader, and the loser stops writing',
    async (_, order) => {
      const ns = await createTestNamespace('le-race-renew');
      const track = new RaceTrack(kubeLeaseClient(admin));
      const a = candidate(track, ns, 'a');
      running.push(a);
      await waitFor(() => a.elector.isLeader() && track.quiet(), {
        description: 'a to create the lease and lead',
      });
      const b = candidate(track, ns, 'b');
      running.push(b);
      await waitFor(() => b.elector.leader() === 'a' && track.quiet(), { description: 'b to see a leading' });
      await step(track, 2_000, a.clock, b.clock);
      await step(track, 2_000, a.clock, b.clock);

      // a's clock stands still (a suspended VM). b saw the lease change last at 4 s; at 20 s it takes it.
      for (let t = 4_000; t < 18_000; t += 2_000) await step(track, 2_000, b.clock);
      expect(leaders(a, b)).toEqual(['a']);
      track.raceNext(['a', 'b'], order);
      await b.clock.advance(2_000);
      await waitFor(() => track.waiting('b'), {
        description: 'b to have read the lease it is about to take',
      });
      // a wakes, renews from the same record: both write with one resourceVersion.
      await step(track, 2_000, a.clock);

      const race = track.writes.slice(-2);
      expect(race.map((w) => w.by).sort()).toEqual(['a', 'b']);
      expect(race.filter((w) => w.ok)).toHaveLength(1);
      expect(race.find((w) => !w.ok)).toMatchObject({ conflict: true });
      const winnerId = race.find((w) => w.ok)!.by;
      if (order !== undefined) expect(winnerId).toBe(order[0]);
      const [winner, loser] = winnerId === 'a' ? [a, b] : [b, a];
      expect(leaders(a, b)).toEqual([winnerId]);
      if (loser === a) expect(a.outcome).toBe('lost');
      const loserWrites = track.successfulWritesBy(loser.identity);

      for (let i = 0; i < 10; i++) {
        await step(track, 2_000, a.clock, b.clock);
        expect(leaders(a, b)).toEqual([winnerId]);
        expect(await holder(ns)).toBe(winner.identity);
      }
      expect(track.successfulWritesBy(loser.identity)).toBe(loserWrites);
    },
  );
});
