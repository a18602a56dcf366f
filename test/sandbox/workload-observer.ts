import { EphemeralRunner, EphemeralRunnerKind } from '@aro/api';
import type { KubeConfig } from '@kubernetes/client-node';
import type { KubeClient } from '@aro/kube';
import type { RunningSimulator } from '../../apps/simulator/src';
import { apiserverRequestCounts, requestCountDelta } from '../harness/apiserver-requests';
import type { ListenerPodPlayer } from '../harness/listener-pod-player';
import { RUNNER_NAMESPACE } from './charts';
import type { ControllerReplicas } from './controllers';
import { desiredReplicas, kubeWrites } from './observe';
import { jobCounts, runnersByPhase, type Snapshot } from './progress';
import type { Workload } from './workload';

export interface WorkloadObserverOptions {
  kube: KubeClient;
  kubeConfig: KubeConfig;
  sim: RunningSimulator;
  workload: Workload;
  controllers: ControllerReplicas;
  listeners: ListenerPodPlayer;
  /** Where a change of leader is told, with the snapshot it was seen in. */
  event: (line: string) => void;
}

/**
 * One look at the run, once a second: jobs by state, runners by phase, desired against actual, the
 * writes and Actions calls since the workload began, the leader and the listeners. Along the way it
 * keeps what the report needs from the whole run: when each runner was first seen and how long it
 * lived, and the leader changes.
 */
export class WorkloadObserver {
  /** Each runner's creation time by UID; -1 once its lifecycle was measured. */
  readonly created = new Map<string, number>();
  readonly lifecycles: number[] = [];
  kubeWriteCount = 0;
  private lastHolder = '';
  private readonly began = Date.now();

  private constructor(
    private readonly o: WorkloadObserverOptions,
    private readonly countsBefore: Map<string, number>,
  ) {}

  /** Starts counting now: what set-up cost is not the workload's. */
  static async start(o: WorkloadObserverOptions): Promise<WorkloadObserver> {
    const before = await apiserverRequestCounts(o.kubeConfig);
    o.sim.resetCallCounts();
    return new WorkloadObserver(o, before);
  }

  async look(): Promise<Snapshot> {
    const { kube, sim, workload, controllers, listeners } = this.o;
    const runners = await kube.list<EphemeralRunner>(EphemeralRunnerKind, { namespace: RUNNER_NAMESPACE });
    const present = new Set<string>();
    for (const r of runners) {
      const uid = r.metadata?.uid ?? '';
      present.add(uid);
      if (!this.created.has(uid))
        this.created.set(uid, Date.parse(String(r.metadata?.creationTimestamp ?? '')) || Date.now());
    }
    for (const [uid, at] of this.created) {
      if (!present.has(uid) && at > 0) {
        this.lifecycles.push(Date.now() - at);
        this.created.set(uid, -1); // measured once
      }
    }
    const counts = await apiserverRequestCounts(this.o.kubeConfig);
    this.kubeWriteCount = kubeWrites(requestCountDelta(this.countsBefore, counts));
    // The holder identity is the replica's name and a start's id: a restarted replica that wins the
    // Lease back is a change of leader too.
    const holder = (await controllers.leader()) ?? '(none)';
    const leader = holder.split('_')[0];
    if (holder !== this.lastHolder) {
      if (this.lastHolder) this.o.event(`leader changed: ${this.lastHolder.split('_')[0]} -> ${leader}`);
      this.lastHolder = holder;
    }
    const alive = runners.filter((r) => !r.metadata?.deletionTimestamp).length;
    return {
      elapsedMs: Date.now() - this.began,
      jobs: jobCounts(sim.jobs().filter((j) => workload.jobIds.includes(j.jobId))),
      runnersByPhase: runnersByPhase(runners),
      desired: await desiredReplicas(kube),
      actual: alive,
      kubeWrites: this.kubeWriteCount,
      actionsCalls: this.actionsCalls(),
      leader,
      listeners: listeners.running().length,
    };
  }

  actionsCalls(): number {
    return Object.values(this.o.sim.callCounts()).reduce((a, b) => a + b, 0);
  }
}
