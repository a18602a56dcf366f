/*
 * @aro/actions/lean: the Actions service client, its errors and types without ActionsModule (which
 * loads @nestjs/common and rxjs). For code that runs outside Nest, such as the per-pod listener;
 * everything else imports @aro/actions.
 */
export { validateCredentials } from './auth';
export type { AdminConnection, GitHubCredentials } from './auth';
export { ActionsServiceClient } from './client';
export type { ActionsClientOptions, CallOptions } from './client';
export { FORCE_GHES_ENV, InvalidConfigUrlError, parseGitHubConfigUrl } from './config-url';
export type { GitHubConfig, GitHubScope } from './config-url';
export type { ProxySettings } from './dispatchers';
export { noProxyMatcher } from './dispatchers';
export {
  ActionsError,
  isActionsError,
  isActionsNotFound,
  isJobStillRunning,
  isMessageQueueTokenExpired,
  isProxyFailure,
  isRateLimited,
  isRunnerExists,
  isRunnerNotFound,
  isSessionConflict,
  isSessionGone,
  isTlsFailure,
  isUnauthorized,
} from './errors';
export type { ActionsErrorKind } from './errors';
export { createAppJwt } from './jwt';
export { MultiClient } from './multi-client';
export type { ClientForOptions, MultiClientOptions } from './multi-client';
export type { RetryOptions } from './retry';
export { CONNECT_FAILURE_CODES, isRetryable } from './retry';
export { fromWireScaleSet, parseJobMessages, runnerScaleSetJobMessagesType, zeroTime } from './types';
export type {
  AcquirableJob,
  JobAssigned,
  JobAvailable,
  JobCompleted,
  JobMessage,
  JobMessageBase,
  JobStarted,
  Label,
  RunnerGroup,
  RunnerReference,
  RunnerScaleSet,
  RunnerScaleSetCreate,
  RunnerScaleSetJitRunnerConfig,
  RunnerScaleSetMessage,
  RunnerScaleSetSession,
  RunnerScaleSetStatistic,
  RunnerScaleSetUpdate,
  RunnerSetting,
} from './types';
export { aroVersion, userAgentFor } from './user-agent';
