import type { FaultSpec } from './types';

/** What the server must do to one call, folded from every fault that matched it. */
export interface FaultDecision {
  latencyMs: number;
  drop: boolean;
  status: number | null;
  retryAfterSeconds: number | null;
  bom: boolean;
  textPlainErrors: boolean;
  emptyErrorBodies: boolean;
}

interface ActiveFault {
  id: number;
  spec: FaultSpec;
  remaining: number;
}

/**
 * Faults are matched by call-counter key (`METHOD template`), consumed one per affected call, and
 * drawn against `errorRate` from a seeded generator so a failing test run can be replayed.
 */
export class FaultInjector {
  private faults: ActiveFault[] = [];
  private nextId = 1;
  private state: number;

  constructor(seed = 0x5eed) {
    this.state = seed >>> 0;
  }

  add(spec: FaultSpec): number {
    if (!spec.route) throw new Error('a fault needs a route ("METHOD template" or "*")');
    if (spec.errorRate !== undefined && (spec.errorRate < 0 || spec.errorRate > 1)) {
      throw new Error(`fault errorRate must be within 0..1, got ${spec.errorRate}`);
    }
    const id = this.nextId++;
    this.faults.push({ id, spec: { ...spec }, remaining: spec.times ?? Number.POSITIVE_INFINITY });
    return id;
  }

  remove(id: number): void {
    this.faults = this.faults.filter((f) => f.id !== id);
  }

  clear(): void {
    this.faults = [];
  }

  list(): Array<FaultSpec & { id: number; remaining: number | null }> {
    return this.faults.map((f) => ({
      ...f.spec,
      id: f.id,
      remaining: Number.isFinite(f.remaining) ? f.remaining : null,
    }));
  }

  decide(routeKey: string): FaultDecision {
    const d: FaultDecision = {
      latencyMs: 0,
      drop: false,
      status: null,
      retryAfterSeconds: null,
      bom: false,
      textPlainErrors: false,
      emptyErrorBodies: false,
    };
    for (const f of this.faults) {
      if (f.spec.route !== '*' && f.spec.route !== routeKey) continue;
      if (f.remaining <= 0) continue;
      // Only one answer can be injected per call; a later status fault waits for a call of its own.
      if (f.spec.status !== undefined && d.status !== null) continue;
      if (f.spec.errorRate !== undefined && this.random() >= f.spec.errorRate) continue;
      f.remaining--;
      d.latencyMs += f.spec.latencyMs ?? 0;
      d.drop ||= !!f.spec.drop;
      if (f.spec.status !== undefined) {
        d.status = f.spec.status;
        d.retryAfterSeconds = f.spec.retryAfterSeconds ?? null;
      }
      d.bom ||= !!f.spec.bom;
      d.textPlainErrors ||= !!f.spec.textPlainErrors;
      d.emptyErrorBodies ||= !!f.spec.emptyErrorBodies;
    }
    this.faults = this.faults.filter((f) => f.remaining > 0);
    return d;
  }

  /** mulberry32 */
  private random(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
}

export class CallCounters {
  private counts = new Map<string, number>();

  record(key: string): void {
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }

  get(key: string): number {
    return this.counts.get(key) ?? 0;
  }

  snapshot(): Record<string, number> {
    return Object.fromEntries([...this.counts.entries()].sort(([a], [b]) => a.localeCompare(b)));
  }

  reset(): void {
    this.counts.clear();
  }
}
