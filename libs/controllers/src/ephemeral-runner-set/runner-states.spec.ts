import { EphemeralRunner } from '@aro/api';
import { idleRunnerCandidates, runnersByState } from './runner-states';

function runner(
  name: string,
  created: string,
  status: EphemeralRunner['status'],
  extra: Partial<EphemeralRunner['metadata']> = {},
): EphemeralRunner {
  return {
    metadata: {
      name,
      creationTimestamp: new Date(created),
      annotations: { 'actions.github.com/patch-id': '3' },
      ...extra,
    },
    spec: { githubConfigUrl: 'https://github.com/o', githubConfigSecret: 's', runnerScaleSetId: 1 },
    status,
  };
}

describe('runnersByState', () => {
  it('buckets by phase, puts runners being deleted apart, and finds the latest patch ID', () => {
    const states = runnersByState([
      runner('p', '2026-01-01T00:00:00Z', undefined),
      runner('r', '2026-01-01T00:00:00Z', { phase: 'Running' }),
      runner('f', '2026-01-01T00:00:00Z', { phase: 'Failed' }),
      runner(
        'd',
        '2026-01-01T00:00:00Z',
        { phase: 'Running' },
        { deletionTimestamp: new Date(), annotations: { 'actions.github.com/patch-id': '9' } },
      ),
    ]);
    expect(states.pending.map((r) => r.metadata?.name)).toEqual(['p']);
    expect(states.running.map((r) => r.metadata?.name)).toEqual(['r']);
    expect(states.failed.map((r) => r.metadata?.name)).toEqual(['f']);
    expect(states.deleting.map((r) => r.metadata?.name)).toEqual(['d']);
    expect(states.latestPatchId).toBe(9);
  });
});

describe('idleRunnerCandidates', () => {
  it('takes Pending oldest first, then Running oldest first, never unregistered runners or runners with a job', () => {
    const states = runnersByState([
      runner('running-old', '2026-01-01T00:00:00Z', { phase: 'Running', runnerId: 1 }),
      runner('pending-new', '2026-01-01T00:05:00Z', { phase: 'Pending', runnerId: 2 }),
      runner('pending-old', '2026-01-01T00:01:00Z', { phase: 'Pending', runnerId: 3 }),
      runner('unregistered', '2025-12-31T00:00:00Z', { phase: 'Pending' }),
      runner('busy', '2025-12-31T00:00:00Z', { phase: 'Running', runnerId: 4, jobId: 'j' }),
    ]);
    expect(idleRunnerCandidates(states).map((r) => r.metadata?.name)).toEqual([
      'pending-old',
      'pending-new',
      'running-old',
    ]);
  });
});
