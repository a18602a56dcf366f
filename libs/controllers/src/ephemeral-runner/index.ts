export { EphemeralRunnerReconciler, BUSY_RUNNER_REQUEUE_MS } from './ephemeral-runner.reconciler';
export type {
  EphemeralRunnerReconcilerDeps,
  EphemeralRunnerReconcilerOptions,
} from './ephemeral-runner.reconciler';
export * from './extensions';
export * from './failure-backoff';
export {
  FIRST_AUDIT_DELAY_MS,
  OrphanRegistrationSweep,
  type OrphanRegistrationSweepOptions,
} from './orphan-sweep';
export { EphemeralRunnerPhaseMetrics } from './phase-metrics';
export { podTerminated, podReady, initContainerFailed, runnerContainerStatus } from './pod-state';
export { ephemeralRunnerPredicate, ownedPodPredicate } from './predicates';
export { runnerSelfDeregistered } from './runner-registration';
export { buildJitSecret, buildRunnerPod, proxyEnv, runnerIdFromSecret } from './runner-resources';
export * from './setup';
export * from './unregistration-queue';
export {
  EPHEMERAL_RUNNER_MODULE_OPTIONS,
  EphemeralRunnerModule,
  EphemeralRunnerController,
  type EphemeralRunnerModuleOptions,
} from './ephemeral-runner.module';
export {
  UNREGISTRATION_MODULE_OPTIONS,
  UnregistrationModule,
  UnregistrationWorkers,
  type UnregistrationModuleOptions,
} from './unregistration.module';
export {
  SCALE_SET_LEDGER_NAME,
  ScaleSetLedger,
  holderOf,
  rememberingScaleSets,
  type ScaleSetLedgerEntry,
  type ScaleSetLedgerOptions,
} from './scale-set-ledger';
export {
  BUSY_RUNNER_LABEL,
  BUSY_RUNNERS_PDB_NAME,
  DO_NOT_DISRUPT_ANNOTATION,
  PodDisruptionBudgetKind,
  REASON_RUNNER_POD_EVICTED,
  SAFE_TO_EVICT_ANNOTATION,
} from './eviction-protection';
export {
  DEFAULT_RUNNER_START_TIMEOUT_MS,
  PERMANENT_WAITING_REASONS,
  REASON_RUNNER_START_FAILED,
  REASON_START_TIMEOUT,
} from './start-watchdog';
export { JobLinkKeys, isLabelValue, jobLinkMetadata, type JobLinkMetadata } from './job-link';
