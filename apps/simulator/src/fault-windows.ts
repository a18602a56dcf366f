import type { FaultSpec } from './types';

/**
 * A fault window: for a while, a share of every protocol call (admin calls are never faulted) meets
 * one kind of trouble GitHub's side really shows, then the service is well again by itself. The chaos
 * runner opens these at seeded moments; a person can with curl (`POST /_sim/fault-windows`).
 *
 * - `server-errors`: 503 without Retry-After, as an overloaded front end answers;
 * - `throttled`: 429 with Retry-After (secondary rate limits);
 * - `slow`: every answer held back (a slow region, a long GC pause);
 * - `reset`: the connection closed without an answer (a load balancer dropping it).
 */
export const FAULT_WINDOW_KINDS = ['server-errors', 'throttled', 'slow', 'reset'] as const;
export type FaultWindowKind = (typeof FAULT_WINDOW_KINDS)[number];

export interface FaultWindowSpec {
  kind: FaultWindowKind;
  /** How long the window stays open. */
  seconds: number;
  /** Share (0..1) of calls affected; default per kind (see DEFAULT_SHARE). */
  share?: number;
}

export interface FaultWindowView extends Required<FaultWindowSpec> {
  id: number;
  /** The fault it injected (`GET /_sim/faults` lists it while the window is open). */
  faultId: number;
  opensAt: string;
  closesAt: string;
}

/** Half the calls refused, a share that retries get through; every call slowed; a third reset. */
const DEFAULT_SHARE: Record<FaultWindowKind, number> = {
  'server-errors': 0.5,
  throttled: 0.5,
  slow: 1,
  reset: 0.3,
};
/** Retry-After sent with the 429s: short enough that a client honouring it sees the window end. */
const THROTTLE_RETRY_AFTER_SECONDS = 2;
/** The delay of a slow answer: longer than a healthy call, shorter than any client's deadline. */
const SLOW_ANSWER_MS = 2_500;

export function faultOfWindow(kind: FaultWindowKind, share: number): FaultSpec {
  const base = { route: '*', errorRate: share };
  switch (kind) {
    case 'server-errors':
      return { ...base, status: 503 };
    case 'throttled':
      return { ...base, status: 429, retryAfterSeconds: THROTTLE_RETRY_AFTER_SECONDS };
    case 'slow':
      return { ...base, latencyMs: SLOW_ANSWER_MS };
    case 'reset':
      return { ...base, drop: true };
  }
}

/** Checks a window asked for over HTTP or in-process; throws naming what is wrong. */
export function checkFaultWindow(spec: Partial<FaultWindowSpec>): Required<FaultWindowSpec> {
  const kind = spec.kind;
  if (typeof kind !== 'string' || !(FAULT_WINDOW_KINDS as readonly string[]).includes(kind)) {
    throw new Error(`"kind" must be one of ${FAULT_WINDOW_KINDS.join(', ')}`);
  }
  const seconds = spec.seconds;
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds <= 0 || seconds > 3_600) {
    throw new Error('"seconds" must be a number above 0 and at most 3600');
  }
  const share = spec.share ?? DEFAULT_SHARE[kind as FaultWindowKind];
  if (typeof share !== 'number' || share < 0 || share > 1) throw new Error('"share" must be within 0..1');
  return { kind: kind as FaultWindowKind, seconds, share };
}

/** The open windows, each closing by its own timer; `closeAll` when the simulator stops. */
export class FaultWindows {
  private readonly open_ = new Map<number, { view: FaultWindowView; timer: NodeJS.Timeout }>();
  private nextId = 1;

  constructor(
    private readonly faults: {
      injectFault(spec: FaultSpec): number;
      removeFault(id: number): void;
    },
    private readonly now: () => number = Date.now,
  ) {}

  open(spec: Partial<FaultWindowSpec>): FaultWindowView {
    const checked = checkFaultWindow(spec);
    const faultId = this.faults.injectFault(faultOfWindow(checked.kind, checked.share));
    const opensAt = this.now();
    const view: FaultWindowView = {
      ...checked,
      id: this.nextId++,
      faultId,
      opensAt: new Date(opensAt).toISOString(),
      closesAt: new Date(opensAt + checked.seconds * 1_000).toISOString(),
    };
    const timer = setTimeout(() => this.close(view.id), checked.seconds * 1_000);
    timer.unref();
    this.open_.set(view.id, { view, timer });
    return view;
  }

  close(id: number): void {
    const window = this.open_.get(id);
    if (!window) return;
    clearTimeout(window.timer);
    this.faults.removeFault(window.view.faultId);
    this.open_.delete(id);
  }

  closeAll(): void {
    for (const id of [...this.open_.keys()]) this.close(id);
  }

  list(): FaultWindowView[] {
    return [...this.open_.values()].map((w) => ({ ...w.view }));
  }
}
