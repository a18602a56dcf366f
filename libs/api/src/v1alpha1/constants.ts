import { DEFAULT_UPSTREAM_COMPATIBILITY, ephemeralRunnerSetFinalizerNames } from './upstream-compat';

/** Name of the container in the runner pod template that runs the Actions runner. */
export const EPHEMERAL_RUNNER_CONTAINER_NAME = 'runner';

/** Name of the listener container in the listener pod. */
export const AUTOSCALING_LISTENER_CONTAINER_NAME = 'listener';

export const Finalizers = {
  autoscalingRunnerSet: 'autoscalingrunnerset.actions.github.com/finalizer',
  /** Upstream main's name (#4516); 0.14.2 used `ephemeralRunner`'s name on the set too. */
  ephemeralRunnerSet: 'ephemeralrunnerset.actions.github.com/finalizer',
  ephemeralRunner: 'ephemeralrunner.actions.github.com/finalizer',
  /** Held until the runner is removed from the Actions service. */
  ephemeralRunnerRegistration: 'ephemeralrunner.actions.github.com/runner-registration-finalizer',
  autoscalingListener: 'autoscalinglistener.actions.github.com/finalizer',
  /** Put by the Helm chart on the secret, roles and service accounts it creates for a scale set. */
  cleanupProtection: 'actions.github.com/cleanup-protection',
} as const;

export const EPHEMERAL_RUNNER_FINALIZER = Finalizers.ephemeralRunner;
export const EPHEMERAL_RUNNER_ACTIONS_FINALIZER = Finalizers.ephemeralRunnerRegistration;
/**
 * The EphemeralRunnerSet finalizer ARO writes by default: the one of the upstream version it stays
 * compatible with unless told otherwise (0.14.2's; `Finalizers.ephemeralRunnerSet` is main's). See
 * upstream-compat.ts.
 */
export const EPHEMERAL_RUNNER_SET_FINALIZER = ephemeralRunnerSetFinalizerNames(
  DEFAULT_UPSTREAM_COMPATIBILITY,
).name;
export const AUTOSCALING_RUNNER_SET_FINALIZER = Finalizers.autoscalingRunnerSet;
export const AUTOSCALING_LISTENER_FINALIZER = Finalizers.autoscalingListener;
export const CLEANUP_PROTECTION_FINALIZER = Finalizers.cleanupProtection;

export const Labels = {
  partOf: 'app.kubernetes.io/part-of',
  component: 'app.kubernetes.io/component',
  version: 'app.kubernetes.io/version',
  os: 'kubernetes.io/os',
  scaleSetName: 'actions.github.com/scale-set-name',
  scaleSetNamespace: 'actions.github.com/scale-set-namespace',
  enterprise: 'actions.github.com/enterprise',
  organization: 'actions.github.com/organization',
  repository: 'actions.github.com/repository',
  runnerTemplateHash: 'runner-template-hash',
  podTemplateHash: 'pod-template-hash',
  /** `"True"` on every runner pod. */
  ephemeralRunnerPod: 'actions-ephemeral-runner',
  autoscalingListenerName: 'auto-scaling-listener-name',
  autoscalingListenerNamespace: 'auto-scaling-listener-namespace',
  /** Set by the Kubernetes container hook on the job pods/secrets it creates for a runner. */
  runnerPod: 'runner-pod',
} as const;

export const LabelValues = {
  partOf: 'gha-runner-scale-set',
  componentRunnerSet: 'runner-set',
  componentRunner: 'runner',
  componentListener: 'runner-scale-set-listener',
  ephemeralRunnerPod: 'True',
  osLinux: 'linux',
} as const;

export const Annotations = {
  runnerGroupName: 'actions.github.com/runner-group-name',
  runnerScaleSetName: 'actions.github.com/runner-scale-set-name',
  /** ERS `spec.patchID` at the runner's creation, as a decimal string. */
  patchId: 'actions.github.com/patch-id',
  /** On the AutoscalingRunnerSet; upstream gives it no prefix. */
  runnerScaleSetId: 'runner-scale-set-id',
  integrityHash: 'actions.github.com/integrity-hash',
  /**
   * ARO, on an EphemeralRunnerSet: the scale set ID its listener was told the Actions service does not
   * have (404 on the session create). The AutoscalingRunnerSet controller checks at once and creates
   * the scale set again, instead of at its next periodic check.
   */
  scaleSetMissing: 'actions.github.com/scale-set-missing',
  /**
   * ARO, on an EphemeralRunnerSet served by the shared listener: `open <owner>` once a replica opened
   * the scale set's message session, `closed <owner>` once it deleted it. The AutoscalingListener
   * controller reports it on the listener's status (a shared listener has no pod to read).
   */
  listenerSession: 'actions.github.com/listener-session',
  /**
   * ARO, on an EphemeralRunnerSet, written by its listener in the same merge patch as
   * `{replicas, patchID}`: the runners (comma-separated names) whose JobCompleted the listener had
   * read when it computed that count, since its previous patch. Their jobs are not in the count, so
   * the set need not hold a slot for them when they end after the patch arrives (runner-endings.ts).
   */
  completedRunners: 'actions.github.com/completed-runners',
  runnerSpecHash: 'actions.github.com/runner-spec-hash',
  /**
   * ARO, on an AutoscalingRunnerSet: the scale set's label names (lower case, sorted, comma-separated)
   * as last sent to the Actions service, so that a pass compares the spec's labels with it and asks the
   * service only when they changed.
   */
  runnerScaleSetLabels: 'actions.github.com/runner-scale-set-labels',
  /** Set by the Helm chart: a hash of the chart values the scale set was rendered from. */
  valuesHash: 'actions.github.com/values-hash',
  cleanupManagerRoleBinding: 'actions.github.com/cleanup-manager-role-binding',
  cleanupManagerRoleName: 'actions.github.com/cleanup-manager-role-name',
  cleanupKubernetesModeRoleName: 'actions.github.com/cleanup-kubernetes-mode-role-name',
  cleanupKubernetesModeRoleBindingName: 'actions.github.com/cleanup-kubernetes-mode-role-binding-name',
  cleanupKubernetesModeServiceAccountName: 'actions.github.com/cleanup-kubernetes-mode-service-account-name',
  cleanupGitHubSecretName: 'actions.github.com/cleanup-github-secret-name',
  cleanupNoPermissionServiceAccountName: 'actions.github.com/cleanup-no-permission-service-account-name',
} as const;

export const Reasons = {
  /** The apiserver refused the runner pod (invalid, or forbidden for a reason other than quota). */
  invalidPod: 'InvalidPod',
  /** Upstream's name for giving up on a runner after repeated pod failures (it is deleted then, not marked). */
  tooManyPodFailures: 'TooManyPodFailures',
  /** The runner exited with the "version deprecated" code. */
  outdated: 'Outdated',
} as const;

export const REASON_INVALID_POD_FAILURE = Reasons.invalidPod;
export const REASON_TOO_MANY_POD_FAILURES = Reasons.tooManyPodFailures;

export const EnvVars = {
  /** secretKeyRef to the JIT config Secret's `jitToken`. */
  runnerJitConfig: 'ACTIONS_RUNNER_INPUT_JITCONFIG',
  runnerExtraUserAgent: 'GITHUB_ACTIONS_RUNNER_EXTRA_USER_AGENT',
  /** Set to "1" so a deprecated runner exits with code 7 instead of self-updating. */
  runnerReturnVersionDeprecatedExitCode: 'ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE',
  /** Present on the runner container when the container hooks (kubernetes mode) are used. */
  runnerContainerHooks: 'ACTIONS_RUNNER_CONTAINER_HOOKS',
  httpProxy: 'http_proxy',
  httpsProxy: 'https_proxy',
  noProxy: 'no_proxy',
  listenerConfigPath: 'LISTENER_CONFIG_PATH',
} as const;

/** Keys of the JIT config Secret the EphemeralRunner controller writes (named after the runner). */
export const JitSecretKeys = {
  jitToken: 'jitToken',
  runnerName: 'runnerName',
  runnerId: 'runnerId',
  scaleSetId: 'scaleSetId',
} as const;

/** Exit code of a runner whose version the service no longer accepts (with the env var above set). */
export const RUNNER_VERSION_DEPRECATED_EXIT_CODE = 7;
