export * from './conditions';
export * from './controller-parts';
export * from './describe-error';
export * from './scale-set-labels';
export * from './define-controller';
export { podTerminated, podReady, initContainerFailed, runnerContainerStatus } from './pod-state';
export { runnerIdFromSecret } from './jit-secret-fields';
export { BUSY_RUNNER_LABEL, DO_NOT_DISRUPT_ANNOTATION, SAFE_TO_EVICT_ANNOTATION } from './busy-marks';
