import {
  Annotations,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
  integrityHash,
  runnerSpecHash,
} from '@aro/api';
import type { KubeApi } from '@aro/kube';
import type { RunnerSetPass } from './runner-set-context';

/** ARO's integrity hashes: 16 lowercase hex digits (`integrityHash` in @aro/api). */
const ARO_HASH = /^[0-9a-f]{16}$/;

/**
 * An integrity hash ARO did not write: upstream's controller stamps its own (a hash of the Go
 * structs' JSON, in another alphabet), which no ARO hash equals even for the very same spec.
 */
export function isUpstreamIntegrityHash(value: string | undefined): boolean {
  return value !== undefined && value !== '' && !ARO_HASH.test(value);
}

/**
 * Whether the set was written by upstream's controller and not yet taken over: it carries upstream's
 * integrity hash (its main branch), or none at all while it already has runners (its 0.14 releases
 * stamp no integrity hash on a set; ARO stores its hash on a set's first pass, before any runner).
 */
export function isUnadoptedUpstreamSet(set: EphemeralRunnerSet, runnerCount: number): boolean {
  const stored = set.metadata?.annotations?.[Annotations.integrityHash];
  return isUpstreamIntegrityHash(stored) || (stored === undefined && runnerCount > 0);
}

/**
 * The hash to keep on the set for its runner spec: {@link runnerSpecHash}, by meaning, so a spec
 * upstream serialized (`metadata: {}`, `resources: {}`) and the same spec rendered by ARO agree.
 * Earlier ARO versions stored the hash of the spec as written; a set still carrying that one for its
 * very spec keeps it, since its runners were built from that spec and replacing them would be a drain
 * for nothing on upgrade. It moves to the new hash with the next real change.
 */
export function storedSpecHash(set: EphemeralRunnerSet): string {
  const stored = set.metadata?.annotations?.[Annotations.integrityHash];
  const spec = set.spec.ephemeralRunnerSpec;
  if (stored !== undefined && stored === integrityHash(spec)) return stored;
  return runnerSpecHash(spec);
}

/**
 * Takes over an EphemeralRunnerSet that upstream's controller wrote (docs/migrating.md): its runners
 * were built from the set's current spec (upstream patches that spec in place only while no runner is
 * pending or running, and before that replaced the whole set), so none is replaced. Only ARO's hash of
 * that spec is stored. Without this, the foreign hash reads as a changed spec, and every idle runner
 * would be deleted and registered again on the first pass.
 */
export async function adoptUpstreamRunnerSet(
  client: Pick<KubeApi, 'mergePatch'>,
  { obj: set, log }: Pick<RunnerSetPass, 'obj' | 'log'>,
  hash: string,
): Promise<EphemeralRunnerSet> {
  log.info("Adopted an EphemeralRunnerSet written by upstream's controller; its runners keep running", {
    upstreamIntegrityHash: set.metadata?.annotations?.[Annotations.integrityHash],
    integrityHash: hash,
  });
  return client.mergePatch<EphemeralRunnerSet>(
    EphemeralRunnerSetKind,
    set.metadata?.namespace ?? '',
    set.metadata?.name ?? '',
    { metadata: { annotations: { [Annotations.integrityHash]: hash } } },
  );
}
