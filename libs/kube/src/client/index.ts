export * from './kinds';
export * from './types';
export {
  KubeApiError,
  KubeTransportError,
  isNotFound,
  isAlreadyExists,
  isConflict,
  isInvalid,
  isForbidden,
  isGone,
  statusMessage,
  ignoreNotFound,
} from './errors';
export { KubeClient, type KubeClientOptions } from './kube-client';
export type { KubeApi } from './kube-api';
export { resourcePath } from './paths';
export { checkKubeConfig, KubeConfigError } from './kubeconfig-check';
export {
  type KubeCluster,
  type KubeConfigSource,
  type KubeContext,
  type KubeUser,
  LeanKubeConfig,
  inClusterKubeConfig,
  jsonKubeConfigFile,
  loadKubeConfigSource,
} from './kubeconfig';
