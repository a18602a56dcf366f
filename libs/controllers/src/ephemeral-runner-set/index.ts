export {
  EphemeralRunnerSetReconciler,
  type EphemeralRunnerSetReconcilerDeps,
  type EphemeralRunnerSetReconcilerOptions,
} from './ephemeral-runner-set.reconciler';
export { EphemeralRunnerSetMetrics } from './runner-set-metrics';
export { buildEphemeralRunner, buildRunnerProxySecret, proxySecretData } from './runner-set-resources';
export { idleRunnerCandidates, runnersByState, type RunnersByState } from './runner-states';
export * from './ephemeral-runner-set.controller';
export { REASON_RUNNER_READY } from './runner-failure-condition';
export { RUNNERS_HEALTHY_CONDITION } from '../shared/runners-healthy';
