import type { RunningSimulator } from '../../apps/simulator/src';

/**
 * Queues `jobs` jobs in the simulator in waves: every `waveSeconds`, `rate * waveSeconds` jobs (at least
 * one), until all are queued. Jobs carry the scale set's label so that the service routes them to it.
 */
export class Workload {
  readonly jobIds: string[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly options: {
      sim: RunningSimulator;
      jobs: number;
      rate: number;
      waveSeconds: number;
      labels: string[];
      /** Runner mode pins jobs to the scale set, since no listener session routes them. */
      scaleSetId?: number;
      onWave?: (queued: number, total: number) => void;
    },
  ) {}

  get queuedAll(): boolean {
    return this.jobIds.length >= this.options.jobs;
  }

  start(): void {
    this.wave();
    this.timer = setInterval(() => this.wave(), this.options.waveSeconds * 1_000);
  }

  private wave(): void {
    const { sim, jobs, rate, waveSeconds, labels, scaleSetId } = this.options;
    const size = Math.max(1, Math.round(rate * waveSeconds));
    for (let i = 0; i < size && this.jobIds.length < jobs; i++) {
      const job = sim.enqueueJob({
        labels,
        ...(scaleSetId !== undefined ? { scaleSetId } : {}),
        repo: 'octo/hello',
        workflowRef: 'octo/hello/.github/workflows/sandbox.yml@refs/heads/main',
        displayName: `sandbox job ${this.jobIds.length + 1}`,
      });
      this.jobIds.push(job.jobId);
    }
    this.options.onWave?.(this.jobIds.length, jobs);
    if (this.queuedAll) this.stop();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
