/**
 * The controller's V8 heap in use, read from its own `/metrics` (prom-client's
 * `nodejs_heap_size_used_bytes`) once a second. RSS says what the process costs the node; the heap
 * says what the JavaScript objects hold, which is what Node's old-space limit (the chart's
 * `heapLimitMiB`) bounds. The gap between the two is native memory and garbage not yet collected.
 */
export class HeapSampler {
  private timer: NodeJS.Timeout | undefined;
  private peak = 0;
  private last = 0;

  constructor(private readonly metricsUrl: string) {}

  start(): void {
    this.timer = setInterval(() => void this.sample(), 1_000);
  }

  /** Reads the heap now; a failed scrape (the process exiting) is skipped, not fatal. */
  async sample(): Promise<number> {
    try {
      const text = await (await fetch(this.metricsUrl, { signal: AbortSignal.timeout(2_000) })).text();
      const line = /^nodejs_heap_size_used_bytes\s+([0-9.e+]+)/m.exec(text);
      if (line?.[1]) {
        this.last = Number(line[1]);
        this.peak = Math.max(this.peak, this.last);
      }
    } catch {
      // the controller is busy or gone: the next sample counts
    }
    return this.last;
  }

  get peakMiB(): number {
    return this.peak / 1024 / 1024;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
