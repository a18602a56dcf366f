import type { EphemeralRunner, ScaleSetCondition } from '@aro/api';
import type { KeyedStore } from '@aro/kube';
import type { RunnerSetPass } from './runner-set-context';
import { findCondition } from '../shared/conditions';
import { RUNNERS_HEALTHY_CONDITION } from '../shared/runners-healthy';

/** The reason of the condition once a runner came up after failures. */
export const REASON_RUNNER_READY = 'RunnerReady';

type ConditionChange = Omit<ScaleSetCondition, 'lastTransitionTime'>;

const COUNT_PREFIX = /^(\d+) runners? failed/;

export interface SetFailures {
  /** Failed runners already counted (by UID): a runner is counted once however many passes see it. */
  counted: Set<string>;
  /** Runners failed per reason since a runner last came up. */
  byReason: Map<string, number>;
}

function failureMessage(count: number, reason: string, last: EphemeralRunner): string {
  const runners = count === 1 ? '1 runner failed' : `${count} runners failed`;
  return `${runners} with ${reason} since a runner last came up; last: ${last.metadata?.name}: ${last.status?.message ?? reason}`;
}

/**
 * Keeps the RunnersHealthy condition of each EphemeralRunnerSet from the runners it sees Failed. The
 * counts live in memory, seeded from the condition's own message after a restart, so that a count
 * survives the controller and costs no write of its own: it rides the status patch the set makes for
 * its runner counts anyway.
 */
export class RunnerFailureCondition {
  /** `sets` is a slot of the reconciler's per-set memory: the counts go when the set does. */
  constructor(private readonly sets: KeyedStore<SetFailures> = new Map<string, SetFailures>()) {}

  /** The condition change this pass calls for, or undefined to leave the set's conditions as they are. */
  observe({
    obj: set,
    key,
    states,
  }: Pick<RunnerSetPass, 'obj' | 'key' | 'states'>): ConditionChange | undefined {
    const current = findCondition(set.status?.conditions, RUNNERS_HEALTHY_CONDITION);
    let entry = this.sets.get(key);
    if (!entry) {
      entry = { counted: new Set(), byReason: new Map() };
      const seeded = current?.status === 'False' ? COUNT_PREFIX.exec(current.message ?? '') : null;
      if (seeded && current?.reason) entry.byReason.set(current.reason, Number(seeded[1]));
      this.sets.set(key, entry);
    }

    let last: EphemeralRunner | undefined;
    for (const runner of states.failed) {
      const uid = runner.metadata?.uid ?? runner.metadata?.name ?? '';
      if (entry.counted.has(uid)) continue;
      entry.counted.add(uid);
      const reason = runner.status?.reason || 'Failed';
      entry.byReason.set(reason, (entry.byReason.get(reason) ?? 0) + 1);
      last = runner;
    }
    // The UIDs only guard against counting one runner twice while it is listed Failed.
    const listed = new Set(states.failed.map((r) => r.metadata?.uid ?? r.metadata?.name ?? ''));
    for (const uid of entry.counted) if (!listed.has(uid)) entry.counted.delete(uid);

    if (last) {
      const reason = last.status?.reason || 'Failed';
      return {
        type: RUNNERS_HEALTHY_CONDITION,
        status: 'False',
        reason,
        message: failureMessage(entry.byReason.get(reason) ?? 1, reason, last),
      };
    }
    const cameUp = [...states.pending, ...states.running].some((r) => r.status?.ready);
    if (cameUp && current?.status === 'False') {
      entry.byReason.clear();
      return {
        type: RUNNERS_HEALTHY_CONDITION,
        status: 'True',
        reason: REASON_RUNNER_READY,
        message: `A runner came up after ${current.reason} failures`,
      };
    }
    return undefined;
  }
}
