export { EphemeralRunnerReconciler, BUSY_RUNNER_REQUEUE_MS } from './ephemeral-runner.reconciler';
export type {
  EphemeralRunnerReconcilerDeps,
  EphemeralRunnerReconcilerOptions,
} from './ephemeral-runner.reconciler';
export * from './extensions';
export * from './failure-backoff';
export { EphemeralRunnerPhaseMetrics } from './phase-metrics';
export { ephemeralRunnerPredicate, ownedPodPredicate } from './predicates';
export { buildJitSecret, buildRunnerPod, proxyEnv } from './runner-resources';
export * from './ephemeral-runner.controller';
export {
  BUSY_RUNNERS_PDB_NAME,
  PodDisruptionBudgetKind,
  REASON_RUNNER_POD_EVICTED,
} from './eviction-protection';
export {
  DEFAULT_RUNNER_START_TIMEOUT_MS,
  PERMANENT_WAITING_REASONS,
  REASON_RUNNER_START_FAILED,
  REASON_START_TIMEOUT,
} from './start-watchdog';
export { JobLinkKeys, isLabelValue, jobLinkMetadata, type JobLinkMetadata } from './job-link';
