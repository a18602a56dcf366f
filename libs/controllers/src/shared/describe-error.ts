/** The message of a thrown value, for a log field, an Event or a status message. */
export function describeError(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
