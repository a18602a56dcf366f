import type { ResourceKind } from '../resource-kind';

export const GROUP = 'actions.github.com';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;

export const AutoscalingRunnerSetKind: ResourceKind = {
  group: GROUP,
  version: VERSION,
  kind: 'AutoscalingRunnerSet',
  plural: 'autoscalingrunnersets',
  namespaced: true,
};

export const EphemeralRunnerSetKind: ResourceKind = {
  group: GROUP,
  version: VERSION,
  kind: 'EphemeralRunnerSet',
  plural: 'ephemeralrunnersets',
  namespaced: true,
};

export const EphemeralRunnerKind: ResourceKind = {
  group: GROUP,
  version: VERSION,
  kind: 'EphemeralRunner',
  plural: 'ephemeralrunners',
  namespaced: true,
};

export const AutoscalingListenerKind: ResourceKind = {
  group: GROUP,
  version: VERSION,
  kind: 'AutoscalingListener',
  plural: 'autoscalinglisteners',
  namespaced: true,
};

/** Every kind this API defines, in the order the CRDs are generated and installed. */
export const ALL_KINDS: readonly ResourceKind[] = [
  AutoscalingRunnerSetKind,
  EphemeralRunnerSetKind,
  EphemeralRunnerKind,
  AutoscalingListenerKind,
];
