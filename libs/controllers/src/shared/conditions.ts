import type { ScaleSetCondition } from '@aro/api';

/* The status conditions of the scale-set objects (EphemeralRunnerSet, AutoscalingRunnerSet, listener). */

/**
 * The conditions with `next` set: the transition time moves only when the status flips, so a
 * condition rewritten with the same status does not look like a new event.
 */
export function setCondition(
  conditions: readonly ScaleSetCondition[] | undefined,
  next: Omit<ScaleSetCondition, 'lastTransitionTime'>,
  now: Date = new Date(),
): ScaleSetCondition[] {
  const current = conditions ?? [];
  const previous = current.find((c) => c.type === next.type);
  const lastTransitionTime =
    previous && previous.status === next.status
      ? previous.lastTransitionTime
      : now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  const updated: ScaleSetCondition = { ...next, lastTransitionTime };
  return previous ? current.map((c) => (c.type === next.type ? updated : c)) : [...current, updated];
}

export function findCondition(
  conditions: readonly ScaleSetCondition[] | undefined,
  type: string,
): ScaleSetCondition | undefined {
  return conditions?.find((c) => c.type === type);
}
