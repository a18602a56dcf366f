import type { ResourceKind } from '@aro/api/lean';
import type { V1ObjectMeta, V1Status } from '@kubernetes/client-node';

/** Any Kubernetes object as plain JSON; client-node's V1Pod, V1Secret, ... all fit. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: V1ObjectMeta;
}

export interface ListOptions {
  /** Omit (or '') for all namespaces; ignored for cluster-scoped kinds. */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

export interface DeleteOptions {
  gracePeriodSeconds?: number;
  /** The delete fails with 409 Conflict when the live object does not match. */
  preconditions?: { uid?: string; resourceVersion?: string };
  propagationPolicy?: 'Background' | 'Foreground' | 'Orphan';
}

/** What reconcilers read through; the informer cache and the client both implement it. */
export interface Reader {
  /** Throws KubeApiError; `isNotFound(e)` when there is no such object. */
  get<T extends KubeObject>(kind: ResourceKind, namespace: string, name: string): Promise<T>;
  list<T extends KubeObject>(kind: ResourceKind, opts?: ListOptions): Promise<T[]>;
}

export interface WatchOptions extends ListOptions {
  resourceVersion: string;
  allowWatchBookmarks?: boolean;
  /** The server closes the stream cleanly after this long. */
  timeoutSeconds?: number;
}

/**
 * One event of a watch stream. ERROR events never reach the callback: they end the watch with a
 * KubeApiError built from their Status (a 410 Gone among them), so a caller handles an HTTP error and an
 * in-stream error in one place.
 */
export interface WatchEvent<T extends KubeObject = KubeObject> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';
  object: T;
}

export type { V1Status };
