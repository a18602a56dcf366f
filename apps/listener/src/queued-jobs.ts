import { Gauge, type Registry } from '@aro/observability/lean';
import type { JobMessageBase, RunnerScaleSetStatistic } from '@aro/actions/lean';

export const OLDEST_QUEUED_JOB_METRIC = 'aro_job_oldest_queued_age_seconds';

/** Queued jobs one listener keeps a clock for at most; a lost start message must not grow memory for ever. */
export const MAX_TRACKED_QUEUED_JOBS = 10_000;

const zeroTime = Date.parse('0001-01-01T00:00:00Z');

/**
 * The jobs assigned to one scale set that no runner has started yet, each with its queue time on
 * GitHub: what the oldest queued job's age is read from. Fed by the job messages the listener already
 * receives (JobAssigned in, JobStarted/JobCompleted out), so it costs no call.
 *
 * A JobStarted lost to a session restart would keep a job "queued" for ever; the service's statistics
 * in every message say how many assigned jobs wait (assigned minus running), and when none wait, every
 * clock is dropped.
 */
export class QueuedJobs {
  /** Queue time (ms) by runner request id; a Map keeps insertion order, so the cap drops the oldest entries. */
  private readonly queueTimes = new Map<number, number>();

  assigned(job: JobMessageBase): void {
    const queued = Date.parse(job.queueTime);
    // A job without a queue time still waits; its clock starts when the listener heard of it.
    const since = Number.isNaN(queued) || queued <= zeroTime ? Date.now() : queued;
    if (!this.queueTimes.has(job.runnerRequestId)) this.queueTimes.set(job.runnerRequestId, since);
    while (this.queueTimes.size > MAX_TRACKED_QUEUED_JOBS) {
      this.queueTimes.delete(this.queueTimes.keys().next().value as number);
    }
  }

  /** Started or completed (a job cancelled while queued completes without starting). */
  left(job: JobMessageBase): void {
    this.queueTimes.delete(job.runnerRequestId);
  }

  statistics(s: RunnerScaleSetStatistic): void {
    if (s.totalAssignedJobs - s.totalRunningJobs <= 0) this.queueTimes.clear();
  }

  get size(): number {
    return this.queueTimes.size;
  }

  /** Seconds the oldest waiting job has been queued; 0 when none waits. */
  oldestAgeSeconds(nowMs: number): number {
    let oldest = Infinity;
    for (const t of this.queueTimes.values()) oldest = Math.min(oldest, t);
    return oldest === Infinity ? 0 : Math.max(0, nowMs - oldest) / 1000;
  }
}

interface Published {
  labels: Record<string, string>;
  jobs: QueuedJobs;
}

/** The scale sets each registry publishes the age for: one listener process may serve many (shared mode). */
const publishedByRegistry = new WeakMap<Registry, Set<Published>>();

/**
 * Publishes the oldest queued job's age of `jobs` under `labels`, computed at scrape time so the age
 * grows between messages; returns the function that stops publishing it.
 */
export function publishOldestQueuedJob(
  registry: Registry,
  labels: Record<string, string>,
  jobs: QueuedJobs,
): () => void {
  let published = publishedByRegistry.get(registry);
  if (!published) {
    const all = (published = new Set<Published>());
    publishedByRegistry.set(registry, all);
    new Gauge({
      name: OLDEST_QUEUED_JOB_METRIC,
      help: 'ARO: seconds since the queue time of the oldest job assigned to the scale set that no runner has started yet (0 when none waits).',
      labelNames: Object.keys(labels),
      registers: [registry],
      collect() {
        const now = Date.now();
        for (const p of all) this.set(p.labels, p.jobs.oldestAgeSeconds(now));
      },
    });
  }
  const entry: Published = { labels, jobs };
  published.add(entry);
  return () => {
    published.delete(entry);
    const gauge = registry.getSingleMetric(OLDEST_QUEUED_JOB_METRIC) as Gauge | undefined;
    gauge?.remove(labels);
  };
}
