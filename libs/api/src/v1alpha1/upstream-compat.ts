import { integrityHash } from './scale-set';

/*
 * What ARO must write so that upstream's controller, at a given version, can take back the objects ARO
 * leaves (docs/migrating.md, "Going back to upstream"), and what either of them may have written that
 * ARO must recognise. Every other finalizer name is the same in upstream's 0.14.2 release and on its
 * main branch (AutoscalingRunnerSet, AutoscalingListener, EphemeralRunner and its registration
 * finalizer, the chart's cleanup-protection); only the EphemeralRunnerSet's changed.
 */

/** The upstream versions ARO can stay compatible with: the 0.14.2 release, and upstream's main branch. */
export const UPSTREAM_COMPATIBILITY_VERSIONS = ['0.14.2', 'main'] as const;
export type UpstreamCompatibility = (typeof UPSTREAM_COMPATIBILITY_VERSIONS)[number];

/**
 * The default: the upstream release. Rolling back to it with the wrong EphemeralRunnerSet finalizer
 * stops serving jobs (its controller deletes ARO's set and waits for ever on a finalizer it does not
 * know); rolling back to a build of main with the 0.14.2 name only keeps its uninstall waiting, and
 * main is not released. So the release is the safer guess when nobody said which one.
 */
export const DEFAULT_UPSTREAM_COMPATIBILITY: UpstreamCompatibility = '0.14.2';

/**
 * The EphemeralRunnerSet finalizer each upstream version adds, and the only one it removes:
 * `ephemeralrunnerset.actions.github.com/finalizer` since upstream's 1-1 set layout (main), the
 * EphemeralRunner's own name before it (0.14.2).
 */
const EPHEMERAL_RUNNER_SET_FINALIZERS: Record<UpstreamCompatibility, string> = {
  '0.14.2': 'ephemeralrunner.actions.github.com/finalizer',
  main: 'ephemeralrunnerset.actions.github.com/finalizer',
};

/**
 * The EphemeralRunnerSet finalizer ARO writes to stay compatible with `version`, and the other names
 * of the same finalizer: a set carrying one of those is ARO's to clean up, and releasing it removes
 * them all (upstream removes only its own name, so a set with a name it does not know would stay
 * Terminating for ever).
 */
export function ephemeralRunnerSetFinalizerNames(version: UpstreamCompatibility): {
  name: string;
  aliases: string[];
} {
  const name = EPHEMERAL_RUNNER_SET_FINALIZERS[version];
  const aliases = [...new Set(Object.values(EPHEMERAL_RUNNER_SET_FINALIZERS))].filter((n) => n !== name);
  return { name, aliases };
}

/**
 * A JSON value as it means, not as it was written: `null`, empty objects and empty lists dropped
 * (recursively, so an object left empty goes too), object keys in any order. Upstream's Go types write
 * `metadata: {}` in a pod template and `resources: {}` in every container, and leave out empty lists
 * and zero-valued fields; the YAML a person writes does the opposite as often. The Kubernetes API
 * reads both the same, so a runner spec compared through this is equal whichever wrote it.
 *
 * List items keep their place (a container or env entry that became empty stays as `{}`): order and
 * position mean something in a pod spec. Zero scalars (`0`, `false`, `""`) are kept: for pointer
 * fields (`runAsUser: 0`, `storageClassName: ""`) they differ from an absent field.
 */
export function meaningOf(value: unknown): unknown {
  return normalize(value) ?? {};
}

function normalize(value: unknown): unknown {
  if (value === null || value === undefined) return undefined;
  if (Array.isArray(value)) {
    if (value.length === 0) return undefined;
    return value.map((item) => normalize(item) ?? (Array.isArray(item) ? [] : {}));
  }
  if (typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) {
      const n = normalize(v);
      if (n !== undefined) out[key] = n;
    }
    return Object.keys(out).length === 0 ? undefined : out;
  }
  return value;
}

/**
 * The integrity hash of an EphemeralRunnerSet's runner spec, by meaning ({@link meaningOf}): what the
 * AutoscalingRunnerSet controller compares with the spec it would render, and what the
 * EphemeralRunnerSet controller stores to notice a changed spec. Equal for a spec upstream wrote and
 * the same spec rendered by ARO, so taking over upstream's set replaces none of its runners.
 */
export function runnerSpecHash(spec: unknown): string {
  return integrityHash(meaningOf(spec));
}
