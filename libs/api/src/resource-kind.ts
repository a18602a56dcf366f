/**
 * What the runtime needs to address a kind over the Kubernetes REST API without discovery: a
 * discovery round trip per kind would cost an API call the operator can do without, and every kind it
 * touches is known at build time.
 */
export interface ResourceKind {
  /** API group; '' for the core group (pods, secrets, ...). */
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  /** Lower-case plural used in REST paths, e.g. `ephemeralrunners`. */
  readonly plural: string;
  readonly namespaced: boolean;
}

/** `group/version`, or just `version` for the core group, as it appears in `apiVersion`. */
export function apiVersionOf(kind: ResourceKind): string {
  return kind.group === '' ? kind.version : `${kind.group}/${kind.version}`;
}
