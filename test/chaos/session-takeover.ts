import type { RunningSimulator } from '../../apps/simulator/src';

/**
 * Shared listener mode: after a `kill-listener` fault killed the replica holding the scale set's
 * message session, when a new session was opened for it and by whom. The job-level invariants alone
 * cannot tell a takeover from runners the controller keeps replacing at the old target; this is the
 * evidence that a replica took the session over (within the service's session timeout plus a backoff
 * step, docs/listener.md "Failover").
 */
export class SessionTakeover {
  private session: { id: string; owner: string } | undefined;
  private kill: { at: number; session: string | undefined } | undefined;
  /** One line per takeover seen: `<owner> after <s> s`. */
  readonly takeovers: string[] = [];

  constructor(
    private readonly sim: RunningSimulator,
    private readonly scaleSetName: string,
  ) {}

  /** A holder was killed and no other session has been seen since. */
  awaiting(): boolean {
    return this.kill !== undefined;
  }

  /** The holder was just killed: the next session with another id is its takeover. */
  killed(): void {
    this.kill = { at: Date.now(), session: this.session?.id };
  }

  /** At each look: the scale set's session now; a line when it is the takeover awaited. */
  look(): string | undefined {
    const scaleSet = this.sim.scaleSets().find((s) => s.name === this.scaleSetName);
    const now = this.sim.sessions().find((s) => s.scaleSetId === scaleSet?.id);
    this.session = now ? { id: now.sessionId, owner: now.ownerName } : undefined;
    if (!this.kill || !now || now.sessionId === this.kill.session) return undefined;
    const line = `${now.ownerName} after ${((Date.now() - this.kill.at) / 1000).toFixed(1)} s`;
    this.kill = undefined;
    this.takeovers.push(line);
    return line;
  }
}
