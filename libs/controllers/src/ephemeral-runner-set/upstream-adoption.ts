import { Annotations, EphemeralRunnerSet, EphemeralRunnerSetKind } from '@aro/api';
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
