import { setTimeout as sleep } from 'node:timers/promises';
import { TIME_SCALE_ENV, timeScale } from './time-scale';

export interface WaitForOptions {
  /**
   * Give up after this long on a quiet machine; default 30 s (GC and namespace deletion are asynchronous
   * and take seconds). Multiplied by the run's time scale (ARO_TEST_TIME_SCALE, time-scale.ts).
   */
  timeoutMs?: number;
  /** Pause between two polls; default 100 ms. */
  intervalMs?: number;
  /** What is awaited, in words, for the timeout message: "pod default/x to be Running". */
  description: string;
}

/**
 * Polls `condition` until it returns a truthy value and resolves with that value. A throw counts as "not
 * yet" (the object may not exist yet), but the last error and the last falsy result are kept for the
 * timeout message, so a test that times out says what it saw rather than only that it waited.
 */
export async function waitFor<T>(
  condition: () => T | Promise<T>,
  options: WaitForOptions,
): Promise<NonNullable<T>> {
  // The scale now (it follows the load up): the one this bound uses, and the one its timeout names.
  const scale = timeScale();
  const timeoutMs = Math.round((options.timeoutMs ?? 30_000) * scale);
  const intervalMs = options.intervalMs ?? 100;
  const deadline = Date.now() + timeoutMs;
  let lastResult: unknown;
  let lastError: unknown;
  let polls = 0;
  for (;;) {
    polls += 1;
    try {
      const result = await condition();
      if (result) {
        return result as NonNullable<T>;
      }
      lastResult = result;
      lastError = undefined;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() >= deadline) {
      const seen =
        lastError !== undefined
          ? `the last poll threw: ${describeError(lastError)}`
          : `the last poll returned ${JSON.stringify(lastResult)}`;
      const scaleNote = scale === 1 ? '' : ` (${TIME_SCALE_ENV}=${scale})`;
      throw new Error(
        `Timed out after ${timeoutMs} ms${scaleNote} (${polls} polls) waiting for ${options.description}; ${seen}`,
      );
    }
    await sleep(Math.min(intervalMs, Math.max(0, deadline - Date.now())));
  }
}

function describeError(err: unknown): string {
  if (err instanceof Error) {
    return err.message;
  }
  return String(err);
}
