/**
 * Time as the queue, the controller and the leader elector see it. Injected so unit tests step time by
 * hand instead of sleeping: a backoff of 1000 s or a lease of 15 s is then tested in microseconds and
 * without flakes.
 */
export interface Clock {
  /** Milliseconds, monotonic: used for durations, deadlines and backoff. */
  now(): number;
  /** Wall-clock time, for timestamps other processes read (a Lease's renewTime). */
  wallTime(): Date;
  /** Runs `fn` once after `ms`; the handle cancels it. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
}

export interface TimerHandle {
  cancel(): void;
}

/**
 * The process clock. Durations come from `performance.now()` so that a wall-clock step (NTP, a VM
 * resume) cannot stretch a backoff or expire a lease early. Timers are unref'd: a queued retry must
 * not keep a process alive that is otherwise done.
 */
export const systemClock: Clock = {
  now: () => performance.now(),
  wallTime: () => new Date(),
  setTimeout(fn, ms) {
    const timer = setTimeout(fn, Math.max(0, ms));
    timer.unref();
    return { cancel: () => clearTimeout(timer) };
  },
};

/** Resolves after `ms` on `clock`, or at once (without rejecting) when `signal` aborts. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const onAbort = (): void => {
      timer.cancel();
      resolve();
    };
    const timer = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
