import type { SandboxHooks, SandboxParts } from './sandbox';

/** Who a listener kill hit: the listener pod, or in shared mode the replica holding the session. */
export interface ListenerVictim {
  name: string;
  shared: boolean;
}

/**
 * SIGKILL of the listener serving the scale set. Pod mode: its listener pod (the pod goes Failed and
 * the controller replaces it). Shared mode: the shared listener replica that holds the scale set's
 * message session, the one whose death matters; no session is deleted, so the standby takes it over
 * once the service expires it. Undefined when there is nothing to kill (no pod, no session held by a
 * running replica).
 */
export async function killListener(parts: SandboxParts): Promise<ListenerVictim | undefined> {
  if (parts.sharedListeners) {
    const scaleSet = parts.sim.scaleSets().find((s) => s.name === parts.release);
    const holder = parts.sim.sessions().find((s) => s.scaleSetId === scaleSet?.id)?.ownerName;
    const victim = holder ? parts.sharedListeners.running(holder) : undefined;
    if (!victim) return undefined;
    await parts.sharedListeners.kill(victim.name);
    return { name: victim.name, shared: true };
  }
  const victim = await parts.listeners.killOne();
  return victim ? { name: victim.pod, shared: false } : undefined;
}

/**
 * `--chaos`: SIGKILL the Lease holder once a third of the jobs are done and the listener at half. The
 * killed replica is restarted as its Deployment would (the sandbox supervises every replica); the
 * listener's pod goes Failed and its controller replaces it. `record` gets one line per kill, for the
 * summary. (The seeded, many-fault version is `npm run chaos`, test/chaos/.)
 */
export function leaderThenListenerKills(jobs: number, record: (line: string) => void): SandboxHooks {
  let leaderKilled = false;
  let listenerKilled = false;
  return {
    async tick(parts, snapshot) {
      const done = snapshot.jobs.succeeded + snapshot.jobs.failed;
      if (!leaderKilled && done >= jobs / 3) {
        leaderKilled = true;
        const victim = await parts.controllers.killLeader();
        record(victim ? `chaos: killed the leader ${victim} (SIGKILL)` : 'chaos: no leader to kill');
      }
      if (!listenerKilled && done >= jobs / 2) {
        listenerKilled = true;
        const victim = await killListener(parts);
        if (victim?.shared) {
          record(`chaos: killed the shared listener replica ${victim.name} holding the session (SIGKILL)`);
        } else if (victim) {
          record(`chaos: killed the listener ${victim.name} (SIGKILL)`);
        } else {
          record(
            parts.sharedListeners
              ? 'chaos: no shared listener replica holds a session'
              : 'chaos: no listener running to kill',
          );
        }
      }
    },
  };
}
