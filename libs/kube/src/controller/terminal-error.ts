/**
 * A reconcile failure that retrying cannot fix: a spec that can never work, a configuration the
 * controller refuses to act under. The controller logs it and counts it as an error like any other,
 * but does not requeue the object: the next change to it (or to what it owns) brings it back. Throw it
 * instead of a plain Error for such cases, so the queue does not retry with backoff forever; record
 * the reason where a person sees it (status, a Warning Event) before throwing.
 */
export class TerminalError extends Error {
  override readonly name = 'TerminalError';
  readonly terminal = true;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

export function isTerminalError(err: unknown): err is TerminalError {
  return err instanceof TerminalError;
}
