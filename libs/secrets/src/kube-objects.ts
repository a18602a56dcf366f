import type { ResourceKind } from '@aro/api';
import { ConfigMapKind, isNotFound, KubeClient, KubeObject, SecretKind } from '@aro/kube';
import { abortable } from './abortable';

/** The parts of a Secret the resolver reads; values in `data` are base64 as served by the API. */
interface SecretObject extends KubeObject {
  data?: Record<string, string>;
}

interface ConfigMapObject extends KubeObject {
  data?: Record<string, string>;
  binaryData?: Record<string, string>;
}

/**
 * Live (uncached) reads of Secrets and ConfigMaps, as upstream does: the operator's informers do not
 * watch Secrets, so a credential rotated a moment ago is seen on the next reconcile without a cluster-
 * wide Secret watch (and without holding every Secret of the cluster in memory).
 *
 * Returns `undefined` for NotFound so callers can name what was missing in their own error.
 */
export async function readSecretData(
  kube: KubeClient,
  namespace: string,
  name: string,
  signal?: AbortSignal,
): Promise<Record<string, string> | undefined> {
  const secret = await readOrUndefined<SecretObject>(kube, SecretKind, namespace, name, signal);
  if (secret === undefined) return undefined;
  const decoded: Record<string, string> = {};
  for (const [key, value] of Object.entries(secret.data ?? {})) {
    decoded[key] = Buffer.from(value, 'base64').toString('utf8');
  }
  return decoded;
}

/** A ConfigMap's text values; `binaryData` entries are decoded too, since a CA bundle may be stored there. */
export async function readConfigMapData(
  kube: KubeClient,
  namespace: string,
  name: string,
  signal?: AbortSignal,
): Promise<Record<string, string> | undefined> {
  const configMap = await readOrUndefined<ConfigMapObject>(kube, ConfigMapKind, namespace, name, signal);
  if (configMap === undefined) return undefined;
  const data: Record<string, string> = {};
  for (const [key, value] of Object.entries(configMap.binaryData ?? {})) {
    data[key] = Buffer.from(value, 'base64').toString('utf8');
  }
  return { ...data, ...configMap.data };
}

async function readOrUndefined<T extends KubeObject>(
  kube: KubeClient,
  kind: ResourceKind,
  namespace: string,
  name: string,
  signal?: AbortSignal,
): Promise<T | undefined> {
  try {
    return await abortable(kube.get<T>(kind, namespace, name), signal);
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}
