import type { EphemeralRunner } from '@aro/api';
import type { JobView } from '../../apps/simulator/src';

/** One look at the whole system, taken about once a second. */
export interface Snapshot {
  elapsedMs: number;
  jobs: { total: number; queued: number; running: number; succeeded: number; failed: number };
  /** EphemeralRunners by status.phase ("New" until the controller sets one). */
  runnersByPhase: Record<string, number>;
  desired: number;
  actual: number;
  kubeWrites: number;
  actionsCalls: number;
  leader: string;
  listeners: number;
}

export function jobCounts(jobs: readonly JobView[]): Snapshot['jobs'] {
  const counts = { total: jobs.length, queued: 0, running: 0, succeeded: 0, failed: 0 };
  for (const job of jobs) {
    if (job.state === 'running') counts.running += 1;
    else if (job.state === 'completed') {
      if (job.result === 'succeeded') counts.succeeded += 1;
      else counts.failed += 1;
    } else counts.queued += 1; // queued, available or acquired: waiting for a runner
  }
  return counts;
}

export function runnersByPhase(runners: readonly EphemeralRunner[]): Record<string, number> {
  const phases: Record<string, number> = {};
  for (const runner of runners) {
    const phase = runner.metadata?.deletionTimestamp ? 'Deleting' : (runner.status?.phase ?? 'New');
    phases[phase] = (phases[phase] ?? 0) + 1;
  }
  return phases;
}

const seconds = (ms: number): string => `${Math.floor(ms / 1000)}s`;

/** The progress block: a few lines, the same shape every time so a TTY can redraw it in place. */
export function renderSnapshot(s: Snapshot): string[] {
  const phases =
    Object.entries(s.runnersByPhase)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([phase, n]) => `${phase} ${n}`)
      .join(', ') || 'none';
  return [
    `[${seconds(s.elapsedMs).padStart(4)}] jobs ${s.jobs.total}: queued ${s.jobs.queued}, running ${s.jobs.running}, ` +
      `done ${s.jobs.succeeded}, failed ${s.jobs.failed}`,
    `       runners: desired ${s.desired}, actual ${s.actual} (${phases})`,
    `       API calls so far: Kubernetes writes ${s.kubeWrites}, Actions calls ${s.actionsCalls}`,
    `       leader: ${s.leader}; listeners running: ${s.listeners}`,
  ];
}

/** The same in one line, for logs and pipes. */
export function renderSnapshotLine(s: Snapshot): string {
  return renderSnapshot(s)
    .map((l) => l.trim())
    .join(' | ');
}

/**
 * Writes progress to a terminal or a pipe. On a TTY the block is redrawn in place (cursor up, clear
 * to end) and event lines appear above it; otherwise each snapshot is one plain line, at most every
 * `plainEveryMs`, and events are lines of their own.
 */
export class ProgressView {
  private drawn = 0;
  private lastPlain = 0;

  constructor(
    private readonly out: NodeJS.WritableStream,
    private readonly tty: boolean,
    private readonly plainEveryMs = 5_000,
  ) {}

  private clear(): void {
    if (this.tty && this.drawn > 0) this.out.write(`\x1b[${this.drawn}A\x1b[J`);
    this.drawn = 0;
  }

  /** A line that stays (a stage reached, a seam named, a chaos event). */
  event(line: string, last?: Snapshot): void {
    this.clear();
    this.out.write(`${line}\n`);
    if (last && this.tty) this.update(last, true);
  }

  update(s: Snapshot, force = false): void {
    if (this.tty) {
      this.clear();
      const lines = renderSnapshot(s);
      this.out.write(`${lines.join('\n')}\n`);
      this.drawn = lines.length;
      return;
    }
    if (force || s.elapsedMs - this.lastPlain >= this.plainEveryMs) {
      this.lastPlain = s.elapsedMs;
      this.out.write(`${renderSnapshotLine(s)}\n`);
    }
  }

  /** Leaves the last block on screen; later output starts below it. */
  release(): void {
    this.drawn = 0;
  }
}
