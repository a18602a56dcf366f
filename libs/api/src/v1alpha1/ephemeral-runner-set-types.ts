import type { KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import type { EphemeralRunnerSpec } from './ephemeral-runner-types';
import type { ResourceMeta } from './shared-types';
import type { ScaleSetCondition } from './scale-set';

export const EphemeralRunnerSetPhase = {
  Running: 'Running',
  /** At least one of its runners is Outdated. */
  Outdated: 'Outdated',
} as const;
export type EphemeralRunnerSetPhase = (typeof EphemeralRunnerSetPhase)[keyof typeof EphemeralRunnerSetPhase];

export interface EphemeralRunnerSetSpec {
  replicas?: number;
  /**
   * Identifies the listener's latest patch; 0 means "not driven by a listener patch" (scale-down of idle
   * runners allowed). Serialised even when 0.
   */
  patchID: number;
  ephemeralRunnerSpec: EphemeralRunnerSpec;
  /** Applied only to runners created after it changes. */
  ephemeralRunnerMetadata?: ResourceMeta;
}

export interface EphemeralRunnerSetStatus {
  currentReplicas: number;
  pendingEphemeralRunners?: number;
  runningEphemeralRunners?: number;
  failedEphemeralRunners?: number;
  phase?: EphemeralRunnerSetPhase;
  /** ARO: why the set is in its phase (e.g. RunnerVersionCurrent False, reason Outdated). */
  conditions?: ScaleSetCondition[];
}

export interface EphemeralRunnerSet extends KubernetesObject {
  spec: EphemeralRunnerSetSpec;
  status?: EphemeralRunnerSetStatus;
}

export type EphemeralRunnerSetList = KubernetesListObject<EphemeralRunnerSet>;
