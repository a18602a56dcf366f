import { Registry } from 'prom-client';
import {
  EPHEMERAL_RUNNER_ACTIONS_FINALIZER,
  EPHEMERAL_RUNNER_FINALIZER,
  type EphemeralRunner,
} from '@aro/api';
import type { ActionsServiceClient, RunnerReference } from '@aro/actions';
import type { Reader } from '@aro/kube';
import { silentLogger } from '@aro/observability';
import { FIRST_AUDIT_DELAY_MS, OrphanRegistrationSweep } from './orphan-sweep';
import type { ScaleSetLedger } from './scale-set-ledger';
import type { UnregistrationQueue } from './unregistration-queue';

/**
 * When the next pass of the sweep is due. After a crash the sweep is what removes a registration whose
 * queued removal died with the process, so how soon it looks again decides how long that leak lasts.
 */
describe('OrphanRegistrationSweep pacing', () => {
  const GRACE_MS = 120_000;
  const INTERVAL_MS = 600_000;

  function sweep(
    registrations: RunnerReference[],
    runners: string[],
    faults: { listRunners?: Error; ledger?: Error; forgottenAfterFirstRead?: boolean } = {},
  ): OrphanRegistrationSweep {
    let ledgerReads = 0;
    const client = {
      listRunners: async () => {
        if (faults.listRunners) throw faults.listRunners;
        return registrations;
      },
      getRunner: async (id: number) => registrations.find((r) => r.id === id),
    } as unknown as ActionsServiceClient;
    const reader = {
      list: async () => runners.map((name) => ({ metadata: { name } }) as EphemeralRunner),
    } as unknown as Reader;
    const ledger = {
      entries: async () => {
        if (faults.ledger) throw faults.ledger;
        if (faults.forgottenAfterFirstRead && ledgerReads++ > 0) return [];
        return [
          {
            namespace: 'ns',
            githubConfigUrl: 'https://github.com/octo',
            githubConfigSecret: 'gh',
            runnerScaleSetId: 1,
          },
        ];
      },
    } as unknown as ScaleSetLedger;
    return new OrphanRegistrationSweep({
      reader,
      actions: { getActionsClient: async () => client },
      queue: { push: () => true } as unknown as UnregistrationQueue,
      ledger,
      logger: silentLogger,
      intervalMs: INTERVAL_MS,
      graceMs: GRACE_MS,
      registry: new Registry(),
    });
  }

  const orphan = { id: 7, name: 'gone-runner', runnerScaleSetId: 1 } as RunnerReference;

  it('looks again once the grace of a registration it just found orphaned has passed, not a whole interval later', async () => {
    const s = sweep([orphan], []);
    expect(await s.sweepOnce()).toBe(0); // first seen: its grace starts now
    for (let i = 0; i < 20; i++) {
      const delay = s.nextPassDelayMs();
      expect(delay).toBeGreaterThanOrEqual(GRACE_MS * 0.8);
      expect(delay).toBeLessThanOrEqual(GRACE_MS * 1.2);
    }
  });

  it('waits the whole interval when every registration has its runner', async () => {
    const s = sweep([orphan], ['gone-runner']);
    expect(await s.sweepOnce()).toBe(0);
    for (let i = 0; i < 20; i++) {
      const delay = s.nextPassDelayMs();
      expect(delay).toBeGreaterThanOrEqual(INTERVAL_MS * 0.8);
      expect(delay).toBeLessThanOrEqual(INTERVAL_MS * 1.2);
    }
  });

  function expectRecheckAfterGrace(s: OrphanRegistrationSweep): void {
    for (let i = 0; i < 20; i++) {
      const delay = s.nextPassDelayMs();
      expect(delay).toBeGreaterThanOrEqual(GRACE_MS * 0.8);
      expect(delay).toBeLessThanOrEqual(GRACE_MS * 1.2);
    }
  }

  it('looks again after the grace, not a whole interval later, when it could not list a scale set', async () => {
    const s = sweep([orphan], [], { listRunners: new Error('503 Service Unavailable') });
    expect(await s.sweepOnce()).toBe(0);
    expectRecheckAfterGrace(s);
  });

  it('waits the whole interval when the scale set it could not list was deleted (left the ledger) during the pass', async () => {
    // The chart's uninstall: the scale set deleted from the service, then the credentials taken away.
    const s = sweep([orphan], [], {
      listRunners: new Error('secrets "gh" is forbidden'),
      forgottenAfterFirstRead: true,
    });
    expect(await s.sweepOnce()).toBe(0);
    for (let i = 0; i < 20; i++) {
      const delay = s.nextPassDelayMs();
      expect(delay).toBeGreaterThanOrEqual(INTERVAL_MS * 0.8);
      expect(delay).toBeLessThanOrEqual(INTERVAL_MS * 1.2);
    }
  });

  it('looks again after the grace, not a whole interval later, when a pass failed', async () => {
    const s = sweep([orphan], [], { ledger: new Error('etcd: storage is (re)initializing') });
    await expect(s.sweepOnce()).rejects.toThrow(/storage is \(re\)initializing/);
    expectRecheckAfterGrace(s);
  });
});

/**
 * A new scale set's first audit: soon, and paid for by the new set alone, so that a fleet of audited
 * sets costs the Actions service nothing more than its full passes.
 */
describe('OrphanRegistrationSweep first audits', () => {
  const INTERVAL_MS = 600_000;
  const entry = (runnerScaleSetId: number) => ({
    namespace: 'ns',
    githubConfigUrl: 'https://github.com/octo',
    githubConfigSecret: 'gh',
    runnerScaleSetId,
  });

  it('lists only the new scale set within the first-audit delay, and keeps the full pass at its time', async () => {
    const ledgerEntries = [entry(1)];
    /** The scale sets the service was asked to list, in order: what the passes cost it. */
    const listed: number[] = [];
    const client = {
      listRunners: async (id: number) => (listed.push(id), []),
    } as unknown as ActionsServiceClient;
    const s = new OrphanRegistrationSweep({
      reader: { list: async () => [] } as unknown as Reader,
      actions: { getActionsClient: async () => client },
      queue: { push: () => true } as unknown as UnregistrationQueue,
      ledger: { entries: async () => ledgerEntries } as unknown as ScaleSetLedger,
      logger: silentLogger,
      intervalMs: INTERVAL_MS,
      graceMs: 120_000,
      registry: new Registry(),
    });
    const term = new AbortController().signal;

    // The pass at election covers every set; the next full pass is an interval away.
    expect(await s.runScheduled(term)).toBeGreaterThanOrEqual(INTERVAL_MS * 0.8);
    expect(listed).toEqual([1]);

    ledgerEntries.push(entry(2));
    expect(s.awaitFirstAudit(entry(2))).toBe(FIRST_AUDIT_DELAY_MS);
    const afterFirstAudit = await s.runScheduled(term);
    expect(listed).toEqual([1, 2]);
    expect(afterFirstAudit).toBeGreaterThan(INTERVAL_MS * 0.7);

    // Nothing new and the full pass not due: a run lists nothing.
    await s.runScheduled(term);
    expect(listed).toEqual([1, 2]);

    // A new leadership term starts with a full pass.
    await s.runScheduled(new AbortController().signal);
    expect(listed).toEqual([1, 2, 1, 2]);
  });
});

/**
 * Which runners still hold their registration. A runner present in the cluster that released it (its
 * registration finalizer gone once it finished or while it was deleted) holds nothing: a registration
 * under its name is a leak, e.g. its queued removal lost in a crash while another finalizer keeps the
 * runner in the apiserver.
 */
describe('OrphanRegistrationSweep judging runners that are still present', () => {
  const HOLDS = EPHEMERAL_RUNNER_FINALIZER;
  const REGISTRATION = EPHEMERAL_RUNNER_ACTIONS_FINALIZER;
  const FOREIGN = 'backup.example.com/snapshot';
  const DELETED = new Date('2026-12-07T10:00:00Z');

  function runner(
    name: string,
    phase: string | undefined,
    finalizers: string[],
    deleting = false,
  ): EphemeralRunner {
    return {
      metadata: { name, finalizers, ...(deleting ? { deletionTimestamp: DELETED } : {}) },
      status: phase ? { phase } : {},
    } as EphemeralRunner;
  }

  it('removes the registrations of finished or deleted runners without their registration finalizer, and only those', async () => {
    const runners = [
      // Released: finished, or being deleted, with the registration finalizer gone.
      runner('succeeded-held', 'Succeeded', [FOREIGN], true),
      runner('failed-not-yet-deleted', 'Failed', [HOLDS]),
      runner('outdated-held', 'Outdated', [FOREIGN], true),
      runner('deleted-mid-job', 'Running', [FOREIGN], true),
      // Still holding: the finalizer is on, or the runner has not been reconciled yet.
      runner('running', 'Running', [HOLDS, REGISTRATION]),
      runner('deleting-job-held', 'Running', [HOLDS, REGISTRATION], true),
      runner('succeeded-not-yet-deleted', 'Succeeded', [HOLDS, REGISTRATION]),
      runner('new', undefined, []),
    ];
    const registrations = runners.map(
      (r, i) => ({ id: i + 1, name: r.metadata?.name ?? '', runnerScaleSetId: 1 }) as RunnerReference,
    );
    const removed: string[] = [];
    const s = new OrphanRegistrationSweep({
      reader: { list: async () => runners } as unknown as Reader,
      actions: {
        getActionsClient: async () =>
          ({
            listRunners: async () => registrations,
            getRunner: async (id: number) => registrations.find((r) => r.id === id),
          }) as unknown as ActionsServiceClient,
      },
      queue: {
        push: (_holder: EphemeralRunner, id: number) => {
          removed.push(registrations.find((r) => r.id === id)?.name ?? '');
          return true;
        },
      } as unknown as UnregistrationQueue,
      ledger: {
        entries: async () => [
          {
            namespace: 'ns',
            githubConfigUrl: 'https://github.com/octo',
            githubConfigSecret: 'gh',
            runnerScaleSetId: 1,
          },
        ],
      } as unknown as ScaleSetLedger,
      logger: silentLogger,
      graceMs: 0,
      registry: new Registry(),
    });
    expect(await s.sweepOnce()).toBe(4);
    expect(removed.sort()).toEqual(
      ['deleted-mid-job', 'failed-not-yet-deleted', 'outdated-held', 'succeeded-held'].sort(),
    );
  });
});
