import type { Jobs } from './jobs';
import type { ActionsStore } from './store';

/**
 * The service's job timers, run by the simulator's sweep: a job offered and not acquired within
 * `jobReofferMs` is offered again; one acquired and not started within `jobStartTimeoutMs` is canceled
 * to its listener and queued again, until `maxJobStartAttempts`, when it completes as canceled.
 */
export function checkJobTimeouts(store: ActionsStore, jobs: Jobs): void {
  const now = store.now();
  const { jobReofferMs, jobStartTimeoutMs, maxJobStartAttempts } = store.timing;
  for (const job of store.jobs.values()) {
    if (job.state === 'available' && jobReofferMs > 0 && now - job.offeredAt >= jobReofferMs) {
      jobs.offer(job);
    } else if (
      job.state === 'acquired' &&
      jobStartTimeoutMs > 0 &&
      now - job.acquiredAt >= jobStartTimeoutMs
    ) {
      const scaleSetId = job.scaleSetId;
      job.startAttempts++;
      if (scaleSetId !== null) {
        store.emit(scaleSetId, {
          ...jobs.jobMessage(job, 'JobCompleted'),
          result: 'canceled',
          runnerId: 0,
          runnerName: '',
        });
      }
      if (job.startAttempts >= maxJobStartAttempts) {
        jobs.unbindRunner(job);
        job.state = 'completed';
        job.result = 'canceled';
        job.finishTime = store.iso();
      } else {
        jobs.requeue(job);
      }
    }
  }
  jobs.dispatchQueuedJobs();
}
