import type { V1OwnerReference } from '@kubernetes/client-node';
import type { ResourceKind } from '@aro/api';
import type { KubeClient, KubeObject } from '@aro/kube';

/* Upstream's names and the small helpers the upstream-state writers share. */

export const UPSTREAM_VERSION = '0.14.2';
export const UPSTREAM_IMAGE = `ghcr.io/actions/gha-runner-scale-set-controller:${UPSTREAM_VERSION}`;
export const GROUP_VERSION = 'actions.github.com/v1alpha1';

/** Upstream's finalizers and annotation keys (controllers/actions.github.com/*_controller.go, constants.go). */
export const Upstream = {
  arsFinalizer: 'autoscalingrunnerset.actions.github.com/finalizer',
  /** The EphemeralRunnerSet finalizer on upstream's main (#4516). */
  ersFinalizer: 'ephemeralrunnerset.actions.github.com/finalizer',
  /** The EphemeralRunnerSet finalizer of the 0.14.2 release (ephemeralrunnerset_controller.go there). */
  ersFinalizer0142: 'ephemeralrunner.actions.github.com/finalizer',
  erFinalizer: 'ephemeralrunner.actions.github.com/finalizer',
  erRegistrationFinalizer: 'ephemeralrunner.actions.github.com/runner-registration-finalizer',
  listenerFinalizer: 'autoscalinglistener.actions.github.com/finalizer',
  /** The chart puts it on the objects it creates for a scale set; the ARS finalizer removes it. */
  cleanupProtection: 'actions.github.com/cleanup-protection',
  scaleSetIdAnnotation: 'runner-scale-set-id',
  runnerGroupAnnotation: 'actions.github.com/runner-group-name',
  scaleSetNameAnnotation: 'actions.github.com/runner-scale-set-name',
  patchIdAnnotation: 'actions.github.com/patch-id',
  integrityHash: 'actions.github.com/integrity-hash',
  versionLabel: 'app.kubernetes.io/version',
} as const;

/**
 * The name upstream gives a scale set's AutoscalingListener (`scaleSetListenerName` and `hashSuffix` in
 * controllers/actions.github.com/resourcebuilder.go, with its hash.FNVHashString; identical at the
 * 0.14.2 tag and on main), restated here from upstream's source and deliberately not ARO's
 * `autoscalingListenerName`: the tests that write upstream's state must not take their names from the
 * product they check. FNV-1a (32 bits) of `namespace@runnerGroup@configUrl`, written in decimal, each
 * digit mapped as k8s.io/apimachinery's rand.SafeEncodeString maps a byte, cut to 8 characters.
 * upstream-names.test.ts checks it against names upstream's own Go code printed.
 */
export function upstreamListenerName(
  arsName: string,
  namespace: string,
  runnerGroup: string,
  configUrl: string,
): string {
  let sum = 2166136261n;
  for (const byte of new TextEncoder().encode(`${namespace}@${runnerGroup}@${configUrl}`)) {
    sum = ((sum ^ BigInt(byte)) * 16777619n) % 4294967296n;
  }
  const alphabet = 'bcdfghjklmnpqrstvwxz2456789';
  const encoded = [...sum.toString(10)].map((c) => alphabet[c.charCodeAt(0) % alphabet.length]).join('');
  return `${arsName}-${encoded.slice(0, 8)}-listener`;
}

/**
 * upstream's v1alpha1.IsVersionAllowed: its controller deletes an AutoscalingRunnerSet whose version
 * label differs in major.minor from its own build (a rule restated here, for the reverse check).
 */
export function upstreamKeepsVersion(label: string | undefined, build = UPSTREAM_VERSION): boolean {
  if (label === build) return true;
  const majorMinor = (v: string | undefined) => /^(\d+)(?:\.(\d+)(?:\.\d+)?)?$/.exec(v ?? '');
  const a = majorMinor(label);
  const b = majorMinor(build);
  return !!a && !!b && a[1] === b[1] && (a[2] ?? '0') === (b[2] ?? '0');
}

/**
 * The owner reference as upstream's controllers write it. Deliberately not `@aro/kube`'s helper: this
 * file writes the state upstream leaves behind, so it must stay upstream's shape even if ARO's helper
 * changes (a product change must not silently change the takeover test's starting state).
 */
export function controllerRef(owner: KubeObject, kind: string, apiVersion = GROUP_VERSION): V1OwnerReference {
  return {
    apiVersion,
    kind,
    name: owner.metadata?.name ?? '',
    uid: owner.metadata?.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

export async function create<T extends KubeObject>(kube: KubeClient, kind: ResourceKind, obj: T): Promise<T> {
  return kube.create<T>(kind, obj);
}

export async function withStatus<T extends KubeObject>(
  kube: KubeClient,
  kind: ResourceKind,
  obj: T,
  status: unknown,
): Promise<T> {
  return kube.mergePatchStatus<T>(kind, obj.metadata?.namespace ?? '', obj.metadata?.name ?? '', {
    status,
  });
}
