import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { MetricsConfig } from '@aro/api/lean';
import type { JobCompleted, JobMessageBase, JobStarted, RunnerScaleSetStatistic } from '@aro/actions/lean';
import {
  type Logger,
  getOrCreateCounter,
  getOrCreateGauge,
  getOrCreateHistogram,
} from '@aro/observability/lean';
import { parseWorkflowRef } from './workflow-ref';
import { QueuedJobs, publishOldestQueuedJob } from './queued-jobs';

/** Upstream's label keys (cmd/ghalistener/metrics); a metric carries the subset its config names. */
export type GhaLabel =
  | 'name'
  | 'namespace'
  | 'enterprise'
  | 'organization'
  | 'repository'
  | 'job_name'
  | 'job_workflow_ref'
  | 'job_workflow_name'
  | 'job_workflow_target'
  | 'event_name'
  | 'job_result';

type Labels = Partial<Record<GhaLabel, string>>;

export const GhaMetric = {
  assignedJobs: 'gha_assigned_jobs',
  runningJobs: 'gha_running_jobs',
  registeredRunners: 'gha_registered_runners',
  busyRunners: 'gha_busy_runners',
  minRunners: 'gha_min_runners',
  maxRunners: 'gha_max_runners',
  desiredRunners: 'gha_desired_runners',
  idleRunners: 'gha_idle_runners',
  startedJobsTotal: 'gha_started_jobs_total',
  completedJobsTotal: 'gha_completed_jobs_total',
  jobStartupDurationSeconds: 'gha_job_startup_duration_seconds',
  jobExecutionDurationSeconds: 'gha_job_execution_duration_seconds',
} as const;

/**
 * ARO's job metrics, beside upstream's (which has neither): how long a scale set's jobs waited for a
 * runner, and what each repository's workflows cost in runner time. Always published; a config entry
 * under the same name (counters/histograms) only chooses their labels and buckets.
 */
export const AroJobMetric = {
  queueWaitSeconds: 'aro_job_queue_wait_seconds',
  runnerSecondsTotal: 'aro_job_runner_seconds_total',
} as const;

const aroHelp: Record<string, string> = {
  [AroJobMetric.queueWaitSeconds]:
    "ARO: time from a job's queue time to its start on a runner of the scale set (in seconds).",
  [AroJobMetric.runnerSecondsTotal]:
    'ARO: runner time spent on jobs (assigned to a runner until finished), by repository and workflow (in seconds).',
};

/** ARO's defaults: the queue wait per scale set; the cost per repository and workflow. */
export const aroJobMetricLabels: Record<string, GhaLabel[]> = {
  [AroJobMetric.queueWaitSeconds]: ['name', 'namespace'],
  [AroJobMetric.runnerSecondsTotal]: ['name', 'namespace', 'organization', 'repository', 'job_workflow_name'],
};

const help: Record<string, string> = {
  [GhaMetric.startedJobsTotal]: 'Total number of jobs started.',
  [GhaMetric.completedJobsTotal]: 'Total number of jobs completed.',
  [GhaMetric.assignedJobs]: 'Number of jobs assigned to this scale set.',
  [GhaMetric.runningJobs]: 'Number of jobs running (or about to be run).',
  [GhaMetric.registeredRunners]: 'Number of runners registered by the scale set.',
  [GhaMetric.busyRunners]: 'Number of registered runners running a job.',
  [GhaMetric.minRunners]: 'Minimum number of runners.',
  [GhaMetric.maxRunners]: 'Maximum number of runners.',
  [GhaMetric.desiredRunners]: 'Number of runners desired by the scale set.',
  [GhaMetric.idleRunners]: 'Number of registered runners not running a job.',
  [GhaMetric.jobStartupDurationSeconds]:
    'Time spent waiting for workflow job to get started on the runner owned by the scale set (in seconds).',
  [GhaMetric.jobExecutionDurationSeconds]:
    'Time spent executing workflow jobs by the scale set (in seconds).',
};

const scaleSetLabels: GhaLabel[] = ['enterprise', 'organization', 'repository', 'name', 'namespace'];
const jobLabels: GhaLabel[] = ['enterprise', 'organization', 'repository', 'job_name', 'event_name'];

const gaugeNames: readonly string[] = [
  GhaMetric.assignedJobs,
  GhaMetric.runningJobs,
  GhaMetric.registeredRunners,
  GhaMetric.busyRunners,
  GhaMetric.minRunners,
  GhaMetric.maxRunners,
  GhaMetric.desiredRunners,
  GhaMetric.idleRunners,
];
const counterNames: readonly string[] = [GhaMetric.startedJobsTotal, GhaMetric.completedJobsTotal];
const histogramNames: readonly string[] = [
  GhaMetric.jobStartupDurationSeconds,
  GhaMetric.jobExecutionDurationSeconds,
];

/** Upstream's default runtime buckets, seconds. */
export const defaultRuntimeBuckets = [
  0.01, 0.05, 0.1, 0.5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 18, 20, 25, 30, 40, 50, 60, 70, 80, 90, 100,
  110, 120, 150, 180, 210, 240, 300, 360, 420, 480, 540, 600, 900, 1200, 1800, 2400, 3000, 3600,
];

/** What is published when the config names no metrics: upstream's default set. */
export const defaultMetricsConfig: Required<MetricsConfig> = {
  counters: {
    [GhaMetric.startedJobsTotal]: { labels: jobLabels },
    [GhaMetric.completedJobsTotal]: { labels: [...jobLabels, 'job_result'] },
  },
  gauges: Object.fromEntries(gaugeNames.map((name) => [name, { labels: scaleSetLabels }])),
  histograms: {
    [GhaMetric.jobStartupDurationSeconds]: { labels: jobLabels, buckets: defaultRuntimeBuckets },
    [GhaMetric.jobExecutionDurationSeconds]: {
      labels: [...jobLabels, 'job_result'],
      buckets: defaultRuntimeBuckets,
    },
  },
};

export interface GhaMetricsOptions {
  registry: Registry;
  logger: Logger;
  /** From config.json `metrics`; upstream's default set when absent. */
  config?: MetricsConfig;
  scaleSet: { name: string; namespace: string; enterprise: string; organization: string; repository: string };
}

interface Family<M> {
  metric: M;
  labels: GhaLabel[];
}

const aroNames: readonly string[] = Object.values(AroJobMetric);

/** The config without ARO's entries: what decides upstream's families. */
function withoutAro(config: MetricsConfig): MetricsConfig {
  const drop = <T>(m: Record<string, T> | undefined): Record<string, T> | undefined =>
    m && Object.fromEntries(Object.entries(m).filter(([name]) => !aroNames.includes(name)));
  return {
    counters: drop(config.counters),
    gauges: drop(config.gauges),
    histograms: drop(config.histograms),
  };
}

/**
 * What decides upstream's families: the config without ARO's entries, or upstream's default set when
 * there is no config or it names only ARO's metrics (say, the scale-set chart's
 * `costMetrics.repositoryLabel: false`): such a config shapes ARO's metrics and turns none of upstream's off.
 */
function upstreamConfig(config: MetricsConfig | undefined): MetricsConfig {
  if (!config) return defaultMetricsConfig;
  const upstream = withoutAro(config);
  return namesAny(upstream) || !namesAny(config) ? upstream : defaultMetricsConfig;
}

function namesAny(config: MetricsConfig): boolean {
  return [config.counters, config.gauges, config.histograms].some((m) => Object.keys(m ?? {}).length > 0);
}

const zeroTime = Date.parse('0001-01-01T00:00:00Z');

/** A time field of a job message in ms, or undefined when unset (Go's zero time) or unparsable. */
function timeMs(value: string | undefined): number | undefined {
  if (!value) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) || ms <= zeroTime ? undefined : ms;
}

/**
 * Seconds from `from` to `to` as upstream measures them: the difference of the two Unix times in whole
 * seconds (Go's `t.Unix()`), so a histogram's sum and buckets match upstream's for the same jobs.
 */
export function wholeSecondsBetween(fromMs: number, toMs: number): number {
  return Math.max(0, Math.floor(toMs / 1000) - Math.floor(fromMs / 1000));
}

/**
 * The listener's `gha_*` metrics, with upstream's names, help texts and labels, so its dashboards
 * and alerts work unchanged. Only the metrics (and labels) the config names are published; an unknown
 * name is logged and skipped, as upstream does.
 */
export class GhaMetrics {
  private readonly counters = new Map<string, Family<Counter>>();
  private readonly gauges = new Map<string, Family<Gauge>>();
  private readonly histograms = new Map<string, Family<Histogram>>();
  private readonly scaleSet: Labels;
  private readonly queueWait: Family<Histogram>;
  private readonly runnerSeconds: Family<Counter>;
  /** The scale set's jobs waiting for a runner, for ARO's oldest-queued-job age. */
  readonly queued = new QueuedJobs();
  private readonly unpublishQueued: () => void;

  constructor(private readonly o: GhaMetricsOptions) {
    const config = upstreamConfig(o.config);
    this.scaleSet = { ...o.scaleSet };
    this.unpublishQueued = publishOldestQueuedJob(
      o.registry,
      { name: o.scaleSet.name, namespace: o.scaleSet.namespace },
      this.queued,
    );
    const waitCfg = o.config?.histograms?.[AroJobMetric.queueWaitSeconds];
    const waitLabels =
      (waitCfg?.labels as GhaLabel[] | undefined) ?? aroJobMetricLabels[AroJobMetric.queueWaitSeconds];
    this.queueWait = {
      labels: waitLabels,
      metric: getOrCreateHistogram(o.registry, {
        name: AroJobMetric.queueWaitSeconds,
        help: aroHelp[AroJobMetric.queueWaitSeconds],
        labelNames: waitLabels,
        buckets: waitCfg?.buckets && waitCfg.buckets.length > 0 ? waitCfg.buckets : defaultRuntimeBuckets,
      }),
    };
    const costLabels =
      (o.config?.counters?.[AroJobMetric.runnerSecondsTotal]?.labels as GhaLabel[] | undefined) ??
      aroJobMetricLabels[AroJobMetric.runnerSecondsTotal];
    this.runnerSeconds = {
      labels: costLabels,
      metric: getOrCreateCounter(o.registry, {
        name: AroJobMetric.runnerSecondsTotal,
        help: aroHelp[AroJobMetric.runnerSecondsTotal],
        labelNames: costLabels,
      }),
    };
    for (const [name, cfg] of Object.entries(config.gauges ?? {})) {
      if (!this.known(name, 'gauge', gaugeNames)) continue;
      const labels = cfg.labels as GhaLabel[];
      this.gauges.set(name, {
        labels,
        metric: getOrCreateGauge(o.registry, { name, help: help[name], labelNames: labels }),
      });
    }
    for (const [name, cfg] of Object.entries(config.counters ?? {})) {
      if (!this.known(name, 'counter', counterNames)) continue;
      const labels = cfg.labels as GhaLabel[];
      this.counters.set(name, {
        labels,
        metric: getOrCreateCounter(o.registry, { name, help: help[name], labelNames: labels }),
      });
    }
    for (const [name, cfg] of Object.entries(config.histograms ?? {})) {
      if (!this.known(name, 'histogram', histogramNames)) continue;
      const labels = cfg.labels as GhaLabel[];
      const buckets = cfg.buckets && cfg.buckets.length > 0 ? cfg.buckets : defaultRuntimeBuckets;
      this.histograms.set(name, {
        labels,
        metric: getOrCreateHistogram(o.registry, { name, help: help[name], labelNames: labels, buckets }),
      });
    }
  }

  /**
   * Drops the scale set's gauges (a shared listener stopped serving it). Job counters and histograms
   * are labelled by job, not by scale set, and stay, as counters do.
   */
  forget(): void {
    for (const f of this.gauges.values()) f.metric.remove(this.pick(f.labels, this.scaleSet));
    this.unpublishQueued();
  }

  recordStatic(minRunners: number, maxRunners: number): void {
    this.setGauge(GhaMetric.minRunners, minRunners);
    this.setGauge(GhaMetric.maxRunners, maxRunners);
  }

  /** The service's counts; an idle scale set reports zeros, so these gauges fall back to 0. */
  recordStatistics(s: RunnerScaleSetStatistic): void {
    this.setGauge(GhaMetric.assignedJobs, s.totalAssignedJobs);
    this.setGauge(GhaMetric.runningJobs, s.totalRunningJobs);
    this.setGauge(GhaMetric.registeredRunners, s.totalRegisteredRunners);
    this.setGauge(GhaMetric.busyRunners, s.totalBusyRunners);
    this.setGauge(GhaMetric.idleRunners, s.totalIdleRunners);
    this.queued.statistics(s);
  }

  /** A job the service assigned to the scale set: its queue clock runs until a runner starts it. */
  recordJobAssigned(job: JobMessageBase): void {
    this.queued.assigned(job);
  }

  recordDesiredRunners(count: number): void {
    this.setGauge(GhaMetric.desiredRunners, count);
  }

  recordJobStarted(job: JobStarted): void {
    this.queued.left(job);
    const labels = this.jobLabels(job);
    this.inc(GhaMetric.startedJobsTotal, labels);
    const assigned = timeMs(job.scaleSetAssignTime);
    const started = timeMs(job.runnerAssignTime);
    if (assigned !== undefined && started !== undefined) {
      this.observe(GhaMetric.jobStartupDurationSeconds, labels, wholeSecondsBetween(assigned, started));
    }
    const queued = timeMs(job.queueTime);
    if (queued !== undefined && started !== undefined) {
      const wait = Math.max(0, started - queued) / 1000;
      this.queueWait.metric.observe(
        this.pick(this.queueWait.labels, { ...labels, ...this.scaleSetIdentity() }),
        wait,
      );
    }
  }

  /** A job that never reached a runner (cancelled while queued) is not counted, as upstream. */
  recordJobCompleted(job: JobCompleted): void {
    this.queued.left(job);
    const started = timeMs(job.runnerAssignTime);
    if (started === undefined) return;
    const labels = { ...this.jobLabels(job), job_result: job.result };
    this.inc(GhaMetric.completedJobsTotal, labels);
    const finished = timeMs(job.finishTime);
    if (finished !== undefined) {
      this.observe(GhaMetric.jobExecutionDurationSeconds, labels, wholeSecondsBetween(started, finished));
      // ARO's cost counter keeps the milliseconds: whole seconds would drop up to a second a job.
      this.runnerSeconds.metric.inc(
        this.pick(this.runnerSeconds.labels, { ...labels, ...this.scaleSetIdentity() }),
        Math.max(0, finished - started) / 1000,
      );
    }
  }

  private known(name: string, kind: string, names: readonly string[]): boolean {
    if (names.includes(name)) return true;
    this.o.logger.error('Unknown listener metric in the config; it is not published', undefined, {
      metric: name,
      kind,
    });
    return false;
  }

  private jobLabels(job: JobMessageBase): Labels {
    const ref = parseWorkflowRef(job.jobWorkflowRef ?? '');
    return {
      enterprise: this.scaleSet.enterprise,
      organization: job.ownerName,
      repository: job.repositoryName,
      job_name: job.jobDisplayName,
      job_workflow_ref: job.jobWorkflowRef,
      job_workflow_name: ref.name,
      job_workflow_target: ref.target,
      event_name: job.eventName,
    };
  }

  /** The scale set a job ran on: ARO's job metrics are per scale set, upstream's job ones are not. */
  private scaleSetIdentity(): Labels {
    return { name: this.scaleSet.name, namespace: this.scaleSet.namespace };
  }

  private pick(wanted: GhaLabel[], all: Labels): Record<string, string> {
    return Object.fromEntries(wanted.map((l) => [l, all[l] ?? '']));
  }

  private setGauge(name: string, value: number): void {
    const f = this.gauges.get(name);
    f?.metric.set(this.pick(f.labels, this.scaleSet), value);
  }

  private inc(name: string, labels: Labels): void {
    const f = this.counters.get(name);
    f?.metric.inc(this.pick(f.labels, labels));
  }

  private observe(name: string, labels: Labels, value: number): void {
    const f = this.histograms.get(name);
    f?.metric.observe(this.pick(f.labels, labels), value);
  }
}
