import type { EphemeralRunner } from '@aro/api';
import { type KeyedStore, ObjectMemory } from '@aro/kube';
import { objectKey as runnerKey } from '@aro/kube';

/** The registration a jitconfig secret records: what the status publishes once the pod runs. */
export interface JitIdentity {
  runnerId: number;
  runnerName: string;
}

/**
 * What this controller already knows of each runner's jitconfig secret, so that it is read from the
 * API only where a fresh read is evidence upstream's guarantees need.
 *
 * Upstream's reconciler reads the secret on every reconcile of a live runner (about eight a runner), yet only two
 * of its uses need the API's answer: whether the secret exists (and is usable) before a pod is
 * created from it, which is what re-registers a runner whose secret was deleted and replaces a
 * corrupt one; and the registration it records before the status publishes it. The first is read
 * fresh every time a pod is about to be created. The second is the answer of the create (or the
 * read) this controller already made, kept here until the status carries it: the secret is written
 * by this controller only, from the same answer.
 *
 * Entries are keyed by namespace/name and hold the runner's UID: a runner deleted and created again
 * under the same name is a different runner and starts from a fresh read. They go when the runner
 * is gone, or once the status records the registration; a restarted controller knows nothing and
 * reads again, as upstream's reconciler does.
 */
export class KnownJitSecrets {
  private readonly identities: KeyedStore<JitIdentity & { uid: string }>;
  /** Runners (by key, holding the UID) whose secret this controller has deleted. */
  private readonly deleted: KeyedStore<string>;

  /** Both kept in the reconciler's per-runner memory: they go when the runner does. */
  constructor(memory: ObjectMemory = new ObjectMemory()) {
    this.identities = memory.slot('jit identity');
    this.deleted = memory.slot('jit secret deleted');
  }

  /** The registration recorded in the secret this controller created or read for this runner. */
  identity(runner: EphemeralRunner): JitIdentity | undefined {
    const known = this.identities.get(runnerKey(runner));
    if (!known || known.uid !== runner.metadata?.uid) return undefined;
    return { runnerId: known.runnerId, runnerName: known.runnerName };
  }

  remember(runner: EphemeralRunner, identity: JitIdentity): void {
    const uid = runner.metadata?.uid;
    if (!uid) return;
    this.identities.set(runnerKey(runner), { uid, ...identity });
    this.deleted.delete(runnerKey(runner));
  }

  /** The status records the registration now: the secret is no longer its only record. */
  published(runner: EphemeralRunner): void {
    this.identities.delete(runnerKey(runner));
  }

  secretDeleted(runner: EphemeralRunner): boolean {
    const uid = runner.metadata?.uid;
    return uid !== undefined && this.deleted.get(runnerKey(runner)) === uid;
  }

  /** This controller deleted the runner's secret: a finished runner never gets another. */
  markSecretDeleted(runner: EphemeralRunner): void {
    const uid = runner.metadata?.uid;
    this.identities.delete(runnerKey(runner));
    if (uid) this.deleted.set(runnerKey(runner), uid);
  }

  /** The runner's secret was replaced: what was known of the old one no longer holds. */
  secretReplaced(key: string): void {
    this.identities.delete(key);
    this.deleted.delete(key);
  }
}
