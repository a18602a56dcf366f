import type { Clock, TimerHandle } from '../queue/clock';

interface FakeTimer {
  readonly at: number;
  readonly seq: number;
  readonly fn: () => void;
  cancelled: boolean;
}

/**
 * A clock that moves only when told to. `advance(ms)` fires due timers in time order (ties in the order
 * they were set), letting promise callbacks run between them, so code that awaits and re-arms a timer
 * behaves as it would in real time.
 */
export class FakeClock implements Clock {
  private current: number;
  private seq = 0;
  private timers: FakeTimer[] = [];

  constructor(
    start = 0,
    private readonly epochMs = Date.UTC(2025, 0, 1),
  ) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  wallTime(): Date {
    return new Date(this.epochMs + this.current);
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const timer: FakeTimer = { at: this.current + Math.max(0, ms), seq: this.seq++, fn, cancelled: false };
    this.timers.push(timer);
    return {
      cancel: () => {
        timer.cancelled = true;
      },
    };
  }

  /** Timers set and not yet fired or cancelled. */
  pendingTimers(): number {
    return this.timers.filter((t) => !t.cancelled).length;
  }

  /** Moves time forward by `ms`, firing every timer that falls due on the way. */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    await flushMicrotasks();
    for (;;) {
      this.timers = this.timers.filter((t) => !t.cancelled);
      const due = this.timers.filter((t) => t.at <= target).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (due === undefined) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.current = Math.max(this.current, due.at);
      due.fn();
      await flushMicrotasks();
    }
    this.current = target;
    await flushMicrotasks();
  }
}

/** Lets every already-resolved promise chain run to its next real wait. */
export async function flushMicrotasks(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await Promise.resolve();
  await new Promise<void>((resolve) => setImmediate(resolve));
}
