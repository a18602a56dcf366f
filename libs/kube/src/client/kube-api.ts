import type { KubeClient } from './kube-client';

/**
 * The calls a reconciler makes through the client. Reconcilers depend on this rather than on the
 * KubeClient class, so a unit spec can hand them the fake of `@aro/kube/testing`.
 */
export type KubeApi = Pick<
  KubeClient,
  'get' | 'list' | 'create' | 'replace' | 'delete' | 'mergePatch' | 'mergePatchStatus'
>;
