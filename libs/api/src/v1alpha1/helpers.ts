import type { EphemeralRunner, EphemeralRunnerPhase, EphemeralRunnerStatus } from './ephemeral-runner-types';
import { EPHEMERAL_RUNNER_CONTAINER_NAME, EnvVars } from './constants';

const DONE_PHASES: ReadonlySet<EphemeralRunnerPhase> = new Set<EphemeralRunnerPhase>([
  'Succeeded',
  'Failed',
  'Outdated',
]);

/** A done runner only gets cleaned up; the EphemeralRunnerSet deletes it. */
export function isDone(runner: Pick<EphemeralRunner, 'status'>): boolean {
  const phase = runner.status?.phase;
  return phase !== undefined && DONE_PHASES.has(phase);
}

/** Upstream keys "has a job" on the job ID, not the job request ID. */
export function hasJob(runner: Pick<EphemeralRunner, 'status'>): boolean {
  return (runner.status?.jobId ?? '').length > 0;
}

/**
 * Kubernetes-mode runners create job pods and secrets labelled `runner-pod=<runner>` that the controller
 * must clean up. Only the first container named `runner` counts, as upstream.
 */
export function hasContainerHookConfigured(runner: Pick<EphemeralRunner, 'spec'>): boolean {
  const container = runner.spec.spec?.containers?.find((c) => c.name === EPHEMERAL_RUNNER_CONTAINER_NAME);
  return (container?.env ?? []).some((env) => env.name === EnvVars.runnerContainerHooks);
}

/**
 * Latest pod failure, or undefined when there is none (upstream returns the zero time). Entries whose value
 * does not parse as a time are ignored rather than poisoning the backoff computation.
 */
export function lastFailure(status: EphemeralRunnerStatus | undefined): Date | undefined {
  let latest: number | undefined;
  for (const value of Object.values(status?.failures ?? {})) {
    const at = Date.parse(value);
    if (Number.isNaN(at)) continue;
    if (latest === undefined || at > latest) latest = at;
  }
  return latest === undefined ? undefined : new Date(latest);
}

/** Number of recorded pod failures (the size of the `failures` map, as upstream counts them). */
export function failureCount(status: EphemeralRunnerStatus | undefined): number {
  return Object.keys(status?.failures ?? {}).length;
}

/**
 * Formats a failure time the way Go's metav1.Time serialises: RFC 3339 with second precision in UTC, so
 * the map we write reads the same as one upstream writes.
 */
export function formatFailureTime(at: Date): string {
  return at.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
