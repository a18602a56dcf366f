/**
 * Which faults a chaos run injects and when, drawn from its seed alone: the same seed gives the same
 * faults at the same moments, so a failing run can be replayed. A moment is a share of the workload's
 * jobs done (not a wall-clock time), so that a replay on a machine twice as loaded still hits the same
 * phase of the run: the ramp-up, the plateau at maxRunners, the tail.
 */

export const FAULT_KINDS = [
  'kill-leader',
  'kill-standby',
  'kill-listener',
  'freeze-apiserver',
  'server-errors',
  'throttled',
  'slow',
  'reset',
  'delete-runner-pod',
  'delete-scale-set',
  'edit-template',
  // Appended, never inserted: a kind's index is what a draw picks. (Appending still changes every
  // seed's draws under the default `kinds`, since the draw scales by their number; CLASSIC_KINDS
  // gives back the schedules drawn before the restarts existed.)
  'restart-apiserver',
  'restart-etcd',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/**
 * The eleven kinds before the control-plane restarts were added: `kinds: CLASSIC_KINDS` (`--kinds
 * classic`) draws exactly what a seed drew then, e.g. the published runs of seeds 100-107.
 */
export const CLASSIC_KINDS: readonly FaultKind[] = FAULT_KINDS.slice(0, 11);

/** The faults that take a control-plane process down for `seconds` and bring it back. */
export const RESTART_KINDS: readonly FaultKind[] = ['restart-apiserver', 'restart-etcd'];

/** The simulator's fault windows (apps/simulator/src/fault-windows.ts). */
export const WINDOW_KINDS: readonly FaultKind[] = ['server-errors', 'throttled', 'slow', 'reset'];

export interface PlannedFault {
  kind: FaultKind;
  /** Injected once this share (0..1) of the workload's jobs is done. */
  atShareDone: number;
  /** For a window, a freeze or a restart: how long it lasts (a restart: the downtime before the start). */
  seconds: number;
  /**
   * For a choice among what is there at that moment (which runner pod) or how (a restart: SIGKILL
   * below 0.5, SIGTERM above): a draw in 0..1.
   */
  pick: number;
}

/** mulberry32: small, fast and good enough to spread faults; the same as the simulator's fault draws. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface ScheduleOptions {
  /** How many faults a run gets, at least and at most. */
  minFaults: number;
  maxFaults: number;
  /** Only these kinds (default all). */
  kinds?: readonly FaultKind[];
}

/**
 * The faults of run `seed`, in the order they fire. Moments fall between 5 % and 85 % of the jobs
 * done, so that every fault meets a busy system and the tail still shows the recovery. Windows last
 * 5 to 20 s (long enough for every client to meet them, short against a run), a freeze of the
 * apiserver 3 to 10 s (longer than the lease's renew deadline, so the leader loses it), the downtime
 * of a restarted apiserver or etcd 2 to 8 s (plus its own start: about 5-15 s more on a loaded machine).
 */
export function planFaults(seed: number, options: ScheduleOptions): PlannedFault[] {
  const random = seededRandom(seed);
  const kinds = options.kinds ?? FAULT_KINDS;
  const count = options.minFaults + Math.floor(random() * (options.maxFaults - options.minFaults + 1));
  const faults: PlannedFault[] = [];
  for (let i = 0; i < count; i++) {
    const kind = kinds[Math.floor(random() * kinds.length)];
    const atShareDone = Math.round((0.05 + random() * 0.8) * 100) / 100;
    const span = kind === 'freeze-apiserver' ? [3, 10] : RESTART_KINDS.includes(kind) ? [2, 8] : [5, 20];
    const seconds = Math.round(span[0] + random() * (span[1] - span[0]));
    const lasts = WINDOW_KINDS.includes(kind) || RESTART_KINDS.includes(kind) || kind === 'freeze-apiserver';
    faults.push({
      kind,
      atShareDone,
      seconds: lasts ? seconds : 0,
      pick: random(),
    });
  }
  return faults.sort((a, b) => a.atShareDone - b.atShareDone);
}

/** One fault as the run's line shows it: `kill-leader@30%`, `slow@45%/12s`. */
export function describeFault(f: PlannedFault): string {
  return `${f.kind}@${Math.round(f.atShareDone * 100)}%${f.seconds ? `/${f.seconds}s` : ''}`;
}
