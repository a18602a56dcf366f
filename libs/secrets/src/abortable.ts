/**
 * Settles with `work`, or rejects with the signal's reason once it aborts. The work itself is not
 * cancelled (a client without signal support cannot be); the caller is released, which is what keeps
 * a reconcile from hanging on an API server that stopped answering.
 */
export function abortable<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return work;
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** A signal that aborts when `outer` does or after `timeoutMs`, whichever is first. */
export function withDeadline(outer: AbortSignal | undefined, timeoutMs: number): AbortSignal {
  const deadline = AbortSignal.timeout(timeoutMs);
  return outer === undefined ? deadline : AbortSignal.any([outer, deadline]);
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new Error('aborted');
}
