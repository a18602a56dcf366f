/** Healthy, or not and why: what /healthz reports. */
export interface HealthStatus {
  healthy: boolean;
  reason?: string;
}

/**
 * A long-running part of the process the manager starts and stops: a controller, a worker pool.
 *
 * `start` runs until `stop` aborts, then stops taking new work, lets work in flight finish and
 * resolves. `cancel`, when given, aborts when work in flight must end at once: the shutdown deadline
 * has passed, or leadership was lost and another replica may already be acting. A runnable that
 * needs leader election is started only on the leader and stopped the moment leadership is lost.
 */
export interface Runnable {
  readonly name: string;
  readonly needLeaderElection: boolean;
  start(stop: AbortSignal, cancel?: AbortSignal): Promise<void>;
  /** Optional; folded into the manager's health for /healthz. */
  health?(): HealthStatus;
}
