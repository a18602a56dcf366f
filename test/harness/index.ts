// What integration tests use from the harness. The control plane itself is started once per jest run by
// global-setup.ts; these helpers find it through process.env (ARO_TEST_CONTROL_PLANE, ARO_TEST_KUBECONFIG).
export {
  controlPlaneInfo,
  hasGarbageCollector,
  installedCrds,
  itWithGarbageCollector,
  testKubeConfig,
} from './context';
export { ControlPlane, type ControlPlaneInfo, type ControlPlaneOptions } from './control-plane';
export { type InstalledCrd } from './crds';
export { createTestNamespace } from './namespaces';
export {
  FAKE_NODE_NAME,
  RUNNER_CONTAINER,
  finishPodDeletion,
  initContainerFailed,
  nodeLost,
  podEvicted,
  podScheduledAndStarting,
  runnerContainerRunning,
  runnerContainerTerminated,
  setPodStatus,
} from './pod-lifecycle';
export { processExists } from './processes';
export { kubeConfigForUser } from './users';
export { waitFor, type WaitForOptions } from './wait-for';
export { readOrUndefined } from './read';
export { apiserverRequestCounts, requestCountDelta } from './apiserver-requests';
export {
  RunnerPlayer,
  type RunnerOutcome,
  type RunnerPlayerOptions,
  type SimulatedRunnerService,
} from './runner-player';
export { ListenerPodPlayer, LISTENER_CONTAINER, type ListenerPodPlayerOptions } from './listener-pod-player';
export { freePort, freePorts } from './ports';
export { auditCounts, auditedRequests, auditedRequestsUpToNow, type AuditedRequest } from './audit-log';
export { ProcessSampler, processCpuSeconds, processMemory } from './process-sampler';
export { percentile } from './stats';
