import { Registry } from 'prom-client';
import type { JobMessageBase, RunnerScaleSetStatistic } from '@aro/actions';
import { silentLogger } from '@aro/observability';
import { GhaMetrics } from './gha-metrics';
import { MAX_TRACKED_QUEUED_JOBS, QueuedJobs } from './queued-jobs';

const now = Date.parse('2026-12-03T10:10:00Z');

function job(runnerRequestId: number, queueTime: string): JobMessageBase {
  return {
    messageType: 'JobAssigned',
    runnerRequestId,
    repositoryName: 'api',
    ownerName: 'octo',
    jobId: `j${runnerRequestId}`,
    jobWorkflowRef: 'octo/api/.github/workflows/ci.yml@refs/heads/main',
    jobDisplayName: 'build',
    workflowRunId: 7,
    eventName: 'push',
    requestLabels: ['set'],
    queueTime,
    scaleSetAssignTime: '',
    runnerAssignTime: '',
    finishTime: '',
  };
}

const stats = (assigned: number, running: number): RunnerScaleSetStatistic => ({
  totalAvailableJobs: 0,
  totalAcquiredJobs: 0,
  totalAssignedJobs: assigned,
  totalRunningJobs: running,
  totalRegisteredRunners: 0,
  totalBusyRunners: 0,
  totalIdleRunners: 0,
});

describe('QueuedJobs: the oldest queued job', () => {
  it('is the earliest queue time among assigned jobs no runner started, 0 when none waits', () => {
    const q = new QueuedJobs();
    expect(q.oldestAgeSeconds(now)).toBe(0);
    q.assigned(job(1, '2026-12-03T10:00:00Z'));
    q.assigned(job(2, '2026-12-03T10:05:00Z'));
    expect(q.oldestAgeSeconds(now)).toBe(600);
    q.left(job(1, ''));
    expect(q.oldestAgeSeconds(now)).toBe(300);
    q.left(job(2, ''));
    expect(q.oldestAgeSeconds(now)).toBe(0);
  });

  it('drops every clock when the statistics say no assigned job waits (a lost JobStarted)', () => {
    const q = new QueuedJobs();
    q.assigned(job(1, '2026-12-03T10:00:00Z'));
    q.statistics(stats(1, 0));
    expect(q.size).toBe(1);
    q.statistics(stats(1, 1));
    expect(q.size).toBe(0);
  });

  it('keeps at most MAX_TRACKED_QUEUED_JOBS clocks, dropping the earliest heard of', () => {
    const q = new QueuedJobs();
    for (let i = 0; i <= MAX_TRACKED_QUEUED_JOBS; i++) q.assigned(job(i, '2026-12-03T10:00:00Z'));
    expect(q.size).toBe(MAX_TRACKED_QUEUED_JOBS);
  });
});

describe('aro_job_oldest_queued_age_seconds', () => {
  it('is served per scale set, growing at scrape time, and gone when a shared listener forgets the set', async () => {
    const registry = new Registry();
    const scaleSet = (name: string) =>
      new GhaMetrics({
        registry,
        logger: silentLogger,
        scaleSet: { name, namespace: 'ns', enterprise: '', organization: 'octo', repository: '' },
      });
    const a = scaleSet('a');
    const b = scaleSet('b');
    const queuedAt = new Date(Date.now() - 90_000).toISOString();
    a.recordJobAssigned(job(1, queuedAt));
    const text = await registry.metrics();
    const age = Number(
      /aro_job_oldest_queued_age_seconds\{name="a",namespace="ns"\} ([\d.]+)/.exec(text)?.[1],
    );
    expect(age).toBeGreaterThanOrEqual(90);
    expect(age).toBeLessThan(120);
    expect(text).toContain('aro_job_oldest_queued_age_seconds{name="b",namespace="ns"} 0');
    b.forget();
    expect(await registry.metrics()).not.toContain('name="b"');
  });
});
