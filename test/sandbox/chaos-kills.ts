import type { SandboxHooks } from './sandbox';

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
        if (parts.sharedListeners) {
          // Shared mode: the replica holding the scale set's session; the standby takes it over.
          const holder = parts.sim.sessions()[0]?.ownerName;
          const victim = holder ? parts.sharedListeners.running(holder) : undefined;
          if (victim) await parts.sharedListeners.kill(victim.name);
          record(
            victim
              ? `chaos: killed the shared listener replica ${victim.name} holding the session (SIGKILL)`
              : 'chaos: no shared listener replica holds a session',
          );
          return;
        }
        const victim = await parts.listeners.killOne();
        record(
          victim
            ? `chaos: killed the listener ${victim.pod} (SIGKILL)`
            : 'chaos: no listener running to kill',
        );
      }
    },
  };
}
