import { silentLogger } from '@aro/observability';
import type { JobCompleted, JobStarted } from '@aro/actions';
import { Registry } from 'prom-client';
import { GhaMetrics } from './gha-metrics';

const job = {
  runnerRequestId: 1,
  repositoryName: 'hello',
  ownerName: 'octo',
  jobId: 'j1',
  jobWorkflowRef: 'octo/hello/.github/workflows/ci.yaml@refs/heads/main',
  jobDisplayName: 'build',
  workflowRunId: 7,
  eventName: 'push',
  requestLabels: ['self-hosted'],
  queueTime: '2026-12-03T10:00:00.000Z',
  // 1.2 s apart on the clock, but across two second boundaries: upstream observes 2.
  scaleSetAssignTime: '2026-12-03T10:00:00.900Z',
  runnerAssignTime: '2026-12-03T10:00:02.100Z',
  // 3.8 s after the runner was assigned, in Unix seconds 102 - 105: upstream observes 3.
  finishTime: '2026-12-03T10:00:05.900Z',
  runnerId: 3,
  runnerName: 'runner-3',
};

describe('GhaMetrics job durations', () => {
  it('observes whole seconds between the Unix times, as upstream does', async () => {
    const registry = new Registry();
    const metrics = new GhaMetrics({
      registry,
      logger: silentLogger,
      scaleSet: { name: 'set', namespace: 'ns', enterprise: '', organization: 'octo', repository: '' },
    });
    metrics.recordJobStarted({ ...job, messageType: 'JobStarted' } satisfies JobStarted);
    metrics.recordJobCompleted({
      ...job,
      messageType: 'JobCompleted',
      result: 'succeeded',
    } satisfies JobCompleted);
    const text = await registry.metrics();
    expect(text).toMatch(/gha_job_startup_duration_seconds_sum\{[^}]*\} 2\n/);
    expect(text).toMatch(/gha_job_execution_duration_seconds_sum\{[^}]*\} 3\n/);
  });
});
