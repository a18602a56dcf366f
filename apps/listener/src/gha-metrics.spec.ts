import { silentLogger } from '@aro/observability';
import type { JobCompleted, JobStarted } from '@aro/actions';
import type { MetricsConfig } from '@aro/api';
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

const base = {
  runnerRequestId: 1,
  repositoryName: 'api',
  ownerName: 'octo',
  jobId: 'j1',
  jobWorkflowRef: 'octo/api/.github/workflows/ci.yml@refs/heads/main',
  jobDisplayName: 'build',
  workflowRunId: 7,
  eventName: 'push',
  requestLabels: ['set'],
  queueTime: '2026-01-01T00:00:00Z',
  scaleSetAssignTime: '2026-01-01T00:00:10Z',
  runnerAssignTime: '2026-01-01T00:00:42Z',
  finishTime: '2026-01-01T00:02:12Z',
};
const started: JobStarted = { ...base, messageType: 'JobStarted', runnerId: 3, runnerName: 'r' };
const completed: JobCompleted = {
  ...base,
  messageType: 'JobCompleted',
  result: 'succeeded',
  runnerId: 3,
  runnerName: 'r',
};

async function servedAfterOneJob(config?: MetricsConfig): Promise<string> {
  const registry = new Registry();
  const gha = new GhaMetrics({
    registry,
    logger: silentLogger,
    config,
    scaleSet: { name: 'set', namespace: 'ns', enterprise: '', organization: 'octo', repository: '' },
  });
  gha.recordJobStarted(started);
  gha.recordJobCompleted(completed);
  return registry.metrics();
}

describe('GhaMetrics: ARO job metrics', () => {
  it('observes queue time -> start per scale set and counts runner-seconds per repository and workflow', async () => {
    const page = await servedAfterOneJob();
    // Queued at :00, on a runner at :42.
    expect(page).toContain('aro_job_queue_wait_seconds_sum{name="set",namespace="ns"} 42');
    expect(page).toContain('aro_job_queue_wait_seconds_bucket{le="50",name="set",namespace="ns"} 1');
    expect(page).toContain('aro_job_queue_wait_seconds_bucket{le="40",name="set",namespace="ns"} 0');
    // On a runner at :42, finished at 2:12.
    expect(page).toContain(
      'aro_job_runner_seconds_total{name="set",namespace="ns",organization="octo",repository="api",job_workflow_name="ci"} 90',
    );
    expect(page).toContain('# TYPE gha_started_jobs_total counter');
  });

  it('leaves the repository out when the config names the cost counter without it, keeping upstream defaults', async () => {
    const page = await servedAfterOneJob({
      counters: {
        aro_job_runner_seconds_total: { labels: ['name', 'namespace', 'organization', 'job_workflow_name'] },
      },
    });
    expect(page).toContain(
      'aro_job_runner_seconds_total{name="set",namespace="ns",organization="octo",job_workflow_name="ci"} 90',
    );
    expect(page).not.toMatch(/aro_job_runner_seconds_total\{[^}]*repository=/);
    // A config naming only ARO's metrics turns none of upstream's off.
    expect(page).toContain('# TYPE gha_started_jobs_total counter');
    expect(page).toContain('# TYPE gha_job_execution_duration_seconds histogram');
  });

  it("keeps a config's upstream choice: naming one upstream metric publishes only it, and ARO's", async () => {
    const page = await servedAfterOneJob({
      counters: { gha_started_jobs_total: { labels: ['repository'] } },
    });
    expect(page).toContain('gha_started_jobs_total{repository="api"} 1');
    expect(page).not.toContain('gha_completed_jobs_total');
    expect(page).toContain('# TYPE aro_job_runner_seconds_total counter');
  });
});

describe('GhaMetrics: ARO job metrics in a shared listener', () => {
  it('keeps one series per scale set in one registry', async () => {
    const registry = new Registry();
    for (const name of ['set-a', 'set-b']) {
      const gha = new GhaMetrics({
        registry,
        logger: silentLogger,
        scaleSet: { name, namespace: 'ns', enterprise: '', organization: 'octo', repository: '' },
      });
      gha.recordJobStarted(started);
    }
    const page = await registry.metrics();
    expect(page).toContain('aro_job_queue_wait_seconds_count{name="set-a",namespace="ns"} 1');
    expect(page).toContain('aro_job_queue_wait_seconds_count{name="set-b",namespace="ns"} 1');
  });
});
