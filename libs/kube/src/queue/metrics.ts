import {
  getOrCreateCounter,
  getOrCreateGauge,
  getOrCreateHistogram,
  metricsRegistry,
} from '@aro/observability';
import type { Gauge, Registry } from 'prom-client';

// controller-runtime's buckets (10 ns .. 1000 s, x10) so dashboards built for Go controllers read ours unchanged.
const latencyBuckets = Array.from({ length: 12 }, (_, i) => 1e-8 * Math.pow(10, i));

/*
 * controller-runtime's priority queue labels depth by priority (0 for events, -100 for the initial list
 * and resyncs). ARO's queue has one priority, so all of its depth is reported as priority 0: a query
 * summing over priority, or selecting priority="0", reads the same as against upstream.
 */
const DEFAULT_PRIORITY = '0';

type QueueLabel = 'name' | 'controller';

/**
 * Queues whose in-progress gauges are computed at scrape time. The gauges are shared by every queue
 * in a registry (one series per `name`), so their collect hook asks each live queue for its own value.
 */
const inProgressSources = new WeakMap<Gauge<QueueLabel>, Set<() => void>>();

function sourcesOf(gauge: Gauge<QueueLabel>): Set<() => void> {
  let sources = inProgressSources.get(gauge);
  if (sources === undefined) {
    sources = new Set();
    inProgressSources.set(gauge, sources);
  }
  return sources;
}

function collectInProgress(this: Gauge<QueueLabel>): void {
  for (const update of inProgressSources.get(this) ?? []) update();
}

/**
 * The workqueue metrics controller-runtime serves for one controller's queue: labelled `name` and
 * `controller` (both the controller's name), and `priority` on depth.
 */
export class QueueMetrics {
  private readonly depth;
  private readonly adds;
  private readonly queueDuration;
  private readonly workDuration;
  private readonly retries;
  private readonly unfinishedWork;
  private readonly longestRunning;
  private readonly labels;
  private readonly depthLabels;
  private readonly reportInProgress: () => void;

  constructor(
    name: string,
    registry: Registry = metricsRegistry(),
    inProgress: () => { unfinishedSeconds: number; longestSeconds: number },
  ) {
    this.labels = { name, controller: name };
    this.depthLabels = { ...this.labels, priority: DEFAULT_PRIORITY };
    this.depth = getOrCreateGauge(registry, {
      name: 'workqueue_depth',
      help: 'Current depth of workqueue by workqueue and priority',
      labelNames: ['name', 'controller', 'priority'] as const,
    });
    this.adds = getOrCreateCounter(registry, {
      name: 'workqueue_adds_total',
      help: 'Total number of adds handled by workqueue',
      labelNames: ['name', 'controller'] as const,
    });
    const latency = (name: string, help: string) =>
      getOrCreateHistogram(registry, {
        name,
        help,
        labelNames: ['name', 'controller'] as const,
        buckets: latencyBuckets,
      });
    this.queueDuration = latency(
      'workqueue_queue_duration_seconds',
      'How long in seconds an item stays in workqueue before being requested',
    );
    this.workDuration = latency(
      'workqueue_work_duration_seconds',
      'How long in seconds processing an item from workqueue takes.',
    );
    this.retries = getOrCreateCounter(registry, {
      name: 'workqueue_retries_total',
      help:
        'Total number of items added to the workqueue with a non-zero delay (rate-limited requeues, ' +
        'explicit RequeueAfter or AddAfter calls)',
      labelNames: ['name', 'controller'] as const,
    });
    // Both read at scrape time, from the work in progress.
    const inProgressGauge = (name: string, help: string) =>
      getOrCreateGauge(registry, {
        name,
        help,
        labelNames: ['name', 'controller'] as const,
        collect: collectInProgress,
      });
    this.unfinishedWork = inProgressGauge(
      'workqueue_unfinished_work_seconds',
      'How many seconds of work has been done that is in progress and has not been observed by ' +
        'work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads ' +
        'by observing the rate at which this increases.',
    );
    this.longestRunning = inProgressGauge(
      'workqueue_longest_running_processor_seconds',
      'How many seconds has the longest running processor for workqueue been running.',
    );
    this.reportInProgress = () => {
      const { unfinishedSeconds, longestSeconds } = inProgress();
      this.unfinishedWork.set(this.labels, unfinishedSeconds);
      this.longestRunning.set(this.labels, longestSeconds);
    };
    sourcesOf(this.unfinishedWork).add(this.reportInProgress);
    sourcesOf(this.longestRunning).add(this.reportInProgress);
    this.depth.set(this.depthLabels, 0);
    this.adds.inc(this.labels, 0);
    this.retries.inc(this.labels, 0);
  }

  added(depth: number): void {
    this.adds.inc(this.labels);
    this.depth.set(this.depthLabels, depth);
  }

  taken(depth: number, queuedSeconds: number): void {
    this.depth.set(this.depthLabels, depth);
    this.queueDuration.observe(this.labels, queuedSeconds);
  }

  finished(workSeconds: number): void {
    this.workDuration.observe(this.labels, workSeconds);
  }

  retried(): void {
    this.retries.inc(this.labels);
  }

  depthChanged(depth: number): void {
    this.depth.set(this.depthLabels, depth);
  }

  /** Stops scrape-time reporting; the last values stay at zero rather than frozen mid-work. */
  close(): void {
    sourcesOf(this.unfinishedWork).delete(this.reportInProgress);
    sourcesOf(this.longestRunning).delete(this.reportInProgress);
    this.unfinishedWork.set(this.labels, 0);
    this.longestRunning.set(this.labels, 0);
  }
}
