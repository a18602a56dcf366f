import type { V1Pod } from '@kubernetes/client-node';
import {
  AutoscalingListenerKind,
  type AutoscalingListener,
  type EphemeralRunner,
  EphemeralRunnerKind,
} from '@aro/api';
import { type KubeClient, PodKind } from '@aro/kube';
import type { RunningSimulator } from '../../apps/simulator/src';

/*
 * What the switch watches, four times a second: the AutoscalingListeners of the scale set, its
 * registrations on the service (and which of them went away without ever taking a job), the sessions
 * the service holds, and the session-create calls the listeners made (a conflict storm shows there).
 */

export interface Sample {
  at: number;
  listeners: string[];
  sessions: number;
  registrations: number;
  idle: string[];
}

export class SwitchObserver {
  readonly samples: Sample[] = [];
  /** Registrations seen, by runner name: whether it ever had a job, and when it went away. */
  readonly registrations = new Map<string, { hadJob: boolean; goneAt?: number; firstSeen: number }>();
  private timer: NodeJS.Timeout | undefined;
  private busy = false;

  constructor(
    private readonly o: {
      kube: KubeClient;
      sim: RunningSimulator;
      controllerNamespace: string;
      scaleSetId: () => number | undefined;
    },
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.sample(), 250);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** Session-create calls the service received so far (successful or refused). */
  sessionCreates(): number {
    const counts = this.o.sim.callCounts();
    return Object.entries(counts)
      .filter(([route]) => /^POST .*sessions$/.test(route))
      .reduce((sum, [, n]) => sum + n, 0);
  }

  /** The largest number of AutoscalingListeners seen at once since `from`, and for how long more than one. */
  listenersSince(from: number): { max: number; moreThanOneMs: number } {
    let max = 0;
    let moreThanOneMs = 0;
    let last: Sample | undefined;
    for (const s of this.samples.filter((x) => x.at >= from)) {
      max = Math.max(max, s.listeners.length);
      if (last && last.listeners.length > 1) moreThanOneMs += s.at - last.at;
      last = s;
    }
    return { max, moreThanOneMs };
  }

  /** The longest stretch since `from` with fewer than `min` idle runners registered, in ms. */
  longestBelowIdle(from: number, until: number, min: number): number {
    let longest = 0;
    let since: number | undefined;
    for (const s of this.samples.filter((x) => x.at >= from && x.at <= until)) {
      if (s.idle.length < min) since ??= s.at;
      else if (since !== undefined) {
        longest = Math.max(longest, s.at - since);
        since = undefined;
      }
    }
    if (since !== undefined) longest = Math.max(longest, until - since);
    return longest;
  }

  /** Runners registered at `at` that went away later without ever taking a job. */
  deregisteredIdle(names: string[]): string[] {
    return names.filter((n) => {
      const r = this.registrations.get(n);
      return r?.goneAt !== undefined && !r.hadJob;
    });
  }

  private async sample(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      const id = this.o.scaleSetId();
      const listeners = await this.o.kube.list<AutoscalingListener>(AutoscalingListenerKind, {
        namespace: this.o.controllerNamespace,
      });
      const regs = id === undefined ? [] : this.o.sim.registrations({ scaleSetId: id });
      const now = Date.now();
      const present = new Set<string>();
      for (const r of regs) {
        present.add(r.name);
        const known = this.registrations.get(r.name) ?? { hadJob: false, firstSeen: now };
        known.hadJob ||= r.jobId !== null;
        this.registrations.set(r.name, known);
      }
      if (id !== undefined) {
        for (const job of this.o.sim.jobs({ scaleSetId: id })) {
          const r = job.runnerName ? this.registrations.get(job.runnerName) : undefined;
          if (r) r.hadJob = true;
        }
      }
      for (const [name, r] of this.registrations) if (!present.has(name)) r.goneAt ??= now;
      this.samples.push({
        at: now,
        listeners: listeners.map((l) => l.metadata?.name ?? ''),
        sessions: this.o.sim.sessions().filter((s) => id === undefined || s.scaleSetId === id).length,
        registrations: regs.length,
        idle: regs.filter((r) => r.status === 'idle' && r.jobId === null).map((r) => r.name),
      });
    } catch {
      // A sample lost to a busy apiserver is a gap in the series, not a finding.
    } finally {
      this.busy = false;
    }
  }
}

/** What the uninstall left in the two namespaces and on the service. */
export async function leftovers(o: {
  kube: KubeClient;
  sim: RunningSimulator;
  namespaces: string[];
  scaleSetId: number;
}): Promise<string[]> {
  const left: string[] = [];
  for (const namespace of o.namespaces) {
    for (const l of await o.kube.list<AutoscalingListener>(AutoscalingListenerKind, { namespace })) {
      left.push(`AutoscalingListener/${l.metadata?.name}`);
    }
    for (const r of await o.kube.list<EphemeralRunner>(EphemeralRunnerKind, { namespace })) {
      left.push(`EphemeralRunner/${r.metadata?.name}`);
    }
    for (const p of await o.kube.list<V1Pod>(PodKind, { namespace })) left.push(`Pod/${p.metadata?.name}`);
  }
  if (o.sim.scaleSet(o.scaleSetId)) left.push(`scale set ${o.scaleSetId} on the service`);
  const sessions = o.sim.sessions().filter((s) => s.scaleSetId === o.scaleSetId).length;
  if (sessions > 0) left.push(`${sessions} open session(s)`);
  const regs = o.sim.registrations({ scaleSetId: o.scaleSetId }).length;
  if (regs > 0) left.push(`${regs} registration(s)`);
  return left;
}
