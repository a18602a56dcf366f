import type { ResourceKind } from '@aro/api/lean';

/**
 * The REST path of a kind's collection or one of its objects, built from the descriptor alone:
 * `/api/v1/namespaces/ns/pods/name/status`, `/apis/<group>/<version>/namespaces/ns/<plural>`, or the
 * cluster-wide `/api/v1/pods` when a namespaced kind is listed without a namespace.
 */
export function resourcePath(
  kind: ResourceKind,
  namespace: string | undefined,
  name?: string,
  subresource?: string,
): string {
  let path = kind.group === '' ? `/api/${kind.version}` : `/apis/${kind.group}/${kind.version}`;
  if (kind.namespaced && namespace) path += `/namespaces/${encodeURIComponent(namespace)}`;
  path += `/${kind.plural}`;
  if (name !== undefined) {
    if (name === '') throw new TypeError(`A ${kind.kind} request needs a name`);
    if (kind.namespaced && !namespace) throw new TypeError(`${kind.kind} ${name} needs a namespace`);
    path += `/${encodeURIComponent(name)}`;
    if (subresource) path += `/${subresource}`;
  }
  return path;
}

/** A query string from the defined entries, with the leading `?`, or '' when there are none. */
export function queryString(params: Record<string, string | number | boolean | undefined>): string {
  const q = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== '') q.set(key, String(value));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}
