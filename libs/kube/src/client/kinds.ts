import type { ResourceKind } from '@aro/api/lean';

/*
 * Descriptors of the built-in kinds the operator touches. With these the client builds every REST path
 * itself, so it never pays a discovery round trip.
 */
export const PodKind: ResourceKind = {
  group: '',
  version: 'v1',
  kind: 'Pod',
  plural: 'pods',
  namespaced: true,
};
export const SecretKind: ResourceKind = {
  group: '',
  version: 'v1',
  kind: 'Secret',
  plural: 'secrets',
  namespaced: true,
};
export const ConfigMapKind: ResourceKind = {
  group: '',
  version: 'v1',
  kind: 'ConfigMap',
  plural: 'configmaps',
  namespaced: true,
};
export const ServiceAccountKind: ResourceKind = {
  group: '',
  version: 'v1',
  kind: 'ServiceAccount',
  plural: 'serviceaccounts',
  namespaced: true,
};
/** Core `v1` Events (the ones `kubectl describe` shows), not `events.k8s.io`. */
export const EventKind: ResourceKind = {
  group: '',
  version: 'v1',
  kind: 'Event',
  plural: 'events',
  namespaced: true,
};
export const NamespaceKind: ResourceKind = {
  group: '',
  version: 'v1',
  kind: 'Namespace',
  plural: 'namespaces',
  namespaced: false,
};
export const RoleKind: ResourceKind = {
  group: 'rbac.authorization.k8s.io',
  version: 'v1',
  kind: 'Role',
  plural: 'roles',
  namespaced: true,
};
export const RoleBindingKind: ResourceKind = {
  group: 'rbac.authorization.k8s.io',
  version: 'v1',
  kind: 'RoleBinding',
  plural: 'rolebindings',
  namespaced: true,
};
export const LeaseKind: ResourceKind = {
  group: 'coordination.k8s.io',
  version: 'v1',
  kind: 'Lease',
  plural: 'leases',
  namespaced: true,
};
