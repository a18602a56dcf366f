import { readFileSync } from 'node:fs';

/** Peak RSS and CPU time of a process, sampled from /proc every 100 ms. */
export class ProcessSampler {
  peakRssKiB = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly pid: number) {
    this.timer = setInterval(() => this.sample(), 100);
  }

  sample(): void {
    try {
      const rss = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${this.pid}/status`, 'utf8'));
      this.peakRssKiB = Math.max(this.peakRssKiB, Number(rss?.[1] ?? 0));
    } catch {
      // The process has exited; the last sample stands.
    }
  }

  /** User + system CPU seconds so far (fields 14 and 15 of /proc/pid/stat, in clock ticks of 10 ms). */
  cpuSeconds(): number {
    const stat = readFileSync(`/proc/${this.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
