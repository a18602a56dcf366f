import { createHash } from 'node:crypto';

/*
 * Names, hashes and condition types shared by the scale-set controllers (EphemeralRunnerSet,
 * AutoscalingRunnerSet, AutoscalingListener) and anything that must find the objects they create
 * (the charts, the listener, tests). Names follow upstream ARC so that objects made by either
 * controller are found by the other.
 */

/** A status condition, with Kubernetes' metav1.Condition field names. */
export interface ScaleSetCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

/** Condition types the scale-set controllers write. */
export const ScaleSetConditionTypes = {
  /** EphemeralRunnerSet / AutoscalingRunnerSet: False with reason Outdated once a runner reports a deprecated version. */
  runnerVersionCurrent: 'RunnerVersionCurrent',
  /** AutoscalingRunnerSet: the scale set exists on the Actions service and matches the spec. */
  scaleSetReady: 'ScaleSetReady',
  /** AutoscalingListener: the listener pod runs; False with the reason it was recreated. */
  listenerRunning: 'ListenerRunning',
  /** AutoscalingRunnerSet: False with reason ListenerImageMissing when the controller has no listener image. */
  listenerConfigured: 'ListenerConfigured',
  /**
   * AutoscalingRunnerSet: False with reason ScaleSetLabelsRefused when the Actions service keeps other
   * labels than the set asks for (GHES before 3.18 keeps only the name); set only once labels differed.
   */
  scaleSetLabelsCurrent: 'ScaleSetLabelsCurrent',
} as const;

/** Reasons of the conditions and Events of the scale-set controllers. */
export const ScaleSetReasons = {
  outdated: 'Outdated',
  scaleSetCreated: 'ScaleSetCreated',
  scaleSetAdopted: 'ScaleSetAdopted',
  scaleSetUpdated: 'ScaleSetUpdated',
  /** The Actions service answered that the scale set is gone (it deletes long-offline ones). */
  scaleSetRecreated: 'ScaleSetRecreated',
  scaleSetDeleted: 'ScaleSetDeleted',
  /** The service answered a label update with other labels than were sent (it dropped some). */
  scaleSetLabelsRefused: 'ScaleSetLabelsRefused',
  scaleSetLabelsCurrent: 'ScaleSetLabelsCurrent',
  invalidCredentials: 'InvalidCredentials',
  /** The set's vault (vaultConfig) cannot serve its GitHub config: a missing key, a refused app, a bad field. */
  vaultFailure: 'VaultFailure',
  /** The set's vault (or the token endpoint it needs) is out for now: throttled, 5xx, unreachable. Retried. */
  vaultUnavailable: 'VaultUnavailable',
  tlsFailure: 'TLSFailure',
  proxyFailure: 'ProxyFailure',
  runnerGroupNotFound: 'RunnerGroupNotFound',
  /** Another AutoscalingRunnerSet of this cluster already uses the scale set of that name and group. */
  scaleSetNameConflict: 'ScaleSetNameConflict',
  actionsServiceError: 'ActionsServiceError',
  invalidConfiguration: 'InvalidConfiguration',
  listenerRunning: 'ListenerRunning',
  listenerPodEnded: 'ListenerPodEnded',
  listenerPodEvicted: 'ListenerPodEvicted',
  listenerPodDeleted: 'ListenerPodDeleted',
  listenerRestartBackoff: 'ListenerRestartBackoff',
  runnerFailed: 'RunnerFailed',
  drainingForUpdate: 'DrainingForUpdate',
  /** No listener image is configured (CONTROLLER_MANAGER_CONTAINER_IMAGE), so no listener can run. */
  listenerImageMissing: 'ListenerImageMissing',
  /** Shared listener mode: a replica of the shared listener holds this scale set's message session. */
  sharedListenerSessionOpen: 'SharedListenerSessionOpen',
  /** Shared listener mode: the config is delivered, but no replica has told of an open session (yet). */
  sharedListenerNoSession: 'SharedListenerNoSession',
} as const;

/** 32-bit FNV-1a of a string's UTF-8 bytes (Go's hash/fnv New32a), as an unsigned number. */
export function fnv32a(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/** 32-bit FNV-1a of a string, as 8 lowercase hex digits. */
export function fnv32aHex(text: string): string {
  return fnv32a(text).toString(16).padStart(8, '0');
}

/**
 * The alphabet Kubernetes' `rand.SafeEncodeString` maps bytes onto (k8s.io/apimachinery util/rand):
 * consonants and digits only, so an encoded value never spells a word and never looks like a number.
 */
const SAFE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/**
 * Upstream's short hash of a string (its `hash.FNVHashString`): the FNV-1a sum written in decimal,
 * each character then mapped through {@link SAFE_ALPHABET} by its code modulo the alphabet's length.
 * The result has as many characters as the decimal has digits (1 to 10).
 */
export function safeEncodedFnv32a(text: string): string {
  let out = '';
  for (const digit of String(fnv32a(text))) {
    out += SAFE_ALPHABET[digit.charCodeAt(0) % SAFE_ALPHABET.length];
  }
  return out;
}

/** JSON with object keys sorted at every level, so equal values always hash the same. */
export function stableJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) out[key] = sortKeys(v);
    }
    return out;
  }
  return value;
}

/**
 * The integrity hash of a spec (annotation `actions.github.com/integrity-hash`): a short digest of its
 * canonical JSON. Only equality matters; the format is ARO's (upstream's is opaque too).
 */
export function integrityHash(value: unknown): string {
  return createHash('sha256').update(stableJson(value)).digest('hex').slice(0, 16);
}

/**
 * A label value Kubernetes accepts, as upstream trims the GitHub URL parts: over 63 characters becomes
 * the first 58 plus `-trim`; otherwise leading and trailing `-`, `_`, `.` are stripped.
 */
export function trimLabelValue(value: string): string {
  if (value.length > 63) return `${value.slice(0, 58)}-trim`;
  return value.replace(/^[-_.]+/, '').replace(/[-_.]+$/, '');
}

/**
 * The Secret with the runner pods' proxy variables, named as upstream names it
 * (`proxyEphemeralRunnerSetSecretName` in its resourcebuilder.go, the same at 0.14.2 and on main):
 * `<set>-<first 8 characters of the safe-encoded FNV-1a of the namespace>-runner-proxy`. With the
 * same name on both sides, runners either controller created find their Secret after a switch, and
 * either controller's cleanup removes the other's.
 */
export function runnerProxySecretName(runnerSetName: string, namespace: string): string {
  return `${runnerSetName}-${safeEncodedFnv32a(namespace).slice(0, 8)}-runner-proxy`;
}

/**
 * The name earlier ARO releases gave that Secret (`<set>-<FNV-1a of the namespace as hex>-runner-proxy`).
 * Runners created then still point at it (`spec.proxySecretRef`), so it is kept until none does.
 */
export function legacyRunnerProxySecretName(runnerSetName: string, namespace: string): string {
  return `${runnerSetName}-${fnv32aHex(namespace)}-runner-proxy`;
}

/**
 * The AutoscalingListener of a scale set, in the controller's namespace, named exactly as upstream
 * names it (`scaleSetListenerName` / `hashSuffix` in its resourcebuilder.go, the same at 0.14.2 and on
 * main): `<set>-<first 8 characters of the safe-encoded FNV-1a of namespace@runnerGroup@configUrl>-listener`.
 * The same name on both sides is what lets either controller find the other's listener as its own
 * after a switch, instead of creating a second one beside it. Like upstream, no length limit is applied.
 */
export function autoscalingListenerName(
  runnerSetName: string,
  namespace: string,
  runnerGroup: string,
  githubConfigUrl: string,
): string {
  const suffix = safeEncodedFnv32a(`${namespace}@${runnerGroup}@${githubConfigUrl}`).slice(0, 8);
  return `${runnerSetName}-${suffix}-listener`;
}

/** Secret with the listener pod's proxy variables (upstream's name). */
export function listenerProxySecretName(listenerName: string): string {
  return `${listenerName}-proxy`;
}

/** The runner group a scale set lands in when `spec.runnerGroup` is empty. */
export const DEFAULT_RUNNER_GROUP = 'Default';
export const DEFAULT_RUNNER_GROUP_ID = 1;
