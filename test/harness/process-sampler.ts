import { readFileSync } from 'node:fs';

/** Resident and peak resident memory of a process (KiB), from /proc; 0 once it is gone. */
export function processMemory(pid: number): { rssKiB: number; hwmKiB: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return {
      rssKiB: Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0),
      hwmKiB: Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0),
    };
  } catch {
    return { rssKiB: 0, hwmKiB: 0 };
  }
}

/** User + system CPU seconds of a process so far (fields 14 and 15 of /proc/pid/stat, ticks of 10 ms); 0 once it is gone. */
export function processCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** Peak RSS and CPU time of a process, sampled from /proc every 100 ms. */
export class ProcessSampler {
  peakRssKiB = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly pid: number) {
    this.timer = setInterval(() => this.sample(), 100);
  }

  sample(): void {
    // 0 once the process has exited: the last sample stands.
    this.peakRssKiB = Math.max(this.peakRssKiB, processMemory(this.pid).rssKiB);
  }

  /** User + system CPU seconds so far. */
  cpuSeconds(): number {
    return processCpuSeconds(this.pid);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
