import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import type { RunningSimulator } from '../../../apps/simulator/src';
import { listPods } from '../../harness/node/product-on-node';
import { getJson } from './product-state';

/**
 * What the rolling-upgrade scenario watches while the charts are upgraded under load, sampled a few
 * times a second from outside the product: the controller's Lease, the listener's message sessions on
 * the simulated service, and every runner pod's deletion. Each sampler records what it saw with the time
 * it saw it; the judgement and the windows are computed from the records afterwards, so a wait of the
 * scenario never hides a moment the samplers missed.
 */

const SAMPLE_MS = 250;

export interface LeaseSample {
  at: number;
  holder: string;
  acquireMs: number;
  renewMs: number;
}

/** One change of the Lease's holder: who had it, who took it, and how long nobody renewed it. */
export interface Handover {
  from: string;
  to: string;
  /** The new holder's acquireTime minus the old holder's last renewTime seen: no replica leads in it. */
  noLeaderMs: number;
  /** When the sampler first saw the new holder. */
  seenAt: number;
}

export interface SessionGap {
  fromMs: number;
  toMs: number;
}

/** A runner pod whose deletion was seen while the simulator still had a job on its runner. */
export interface BusyKill {
  pod: string;
  job: string;
  jobState: string;
  seenAt: number;
}

export class UpgradeWatch {
  readonly lease: LeaseSample[] = [];
  /** Times at which the scale set had no message session, and at which it had more than one. */
  readonly sessionless: SessionGap[] = [];
  readonly doubleSessions: number[] = [];
  readonly sessionIds = new Set<string>();
  readonly busyKills: BusyKill[] = [];
  /** Every runner pod seen, by name: the runner names the jobs report must be among them. */
  readonly runnerPods = new Set<string>();
  /** The runner template revision (env ARO_TEMPLATE_REVISION) each runner pod was made from. */
  readonly podRevision = new Map<string, string | undefined>();
  private readonly deleting = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private busy = false;
  private openGap: number | undefined;
  readonly errors: string[] = [];

  constructor(
    private readonly kc: KubeConfig,
    private readonly sim: RunningSimulator,
    private readonly leasePath: string,
    private readonly runnerNamespace: string,
    private readonly scaleSetId: number,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      if (this.busy) return; // a slow apiserver answer: skip a tick rather than pile requests up
      this.busy = true;
      this.sample()
        .catch((err: Error) => this.errors.push(err.message))
        .finally(() => (this.busy = false));
    }, SAMPLE_MS);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    if (this.openGap !== undefined) this.sessionless.push({ fromMs: this.openGap, toMs: Date.now() });
    this.openGap = undefined;
  }

  private async sample(): Promise<void> {
    const now = Date.now();
    // Sessions first: the simulator answers in-process, at the tick's own time.
    const sessions = this.sim.sessions().filter((s) => s.scaleSetId === this.scaleSetId);
    for (const s of sessions) this.sessionIds.add(s.sessionId);
    if (sessions.length > 1) this.doubleSessions.push(now);
    if (sessions.length === 0 && this.openGap === undefined) this.openGap = now;
    if (sessions.length > 0 && this.openGap !== undefined) {
      this.sessionless.push({ fromMs: this.openGap, toMs: now });
      this.openGap = undefined;
    }

    const lease = await getJson<{
      spec?: { holderIdentity?: string; acquireTime?: string; renewTime?: string };
    }>(this.kc, this.leasePath);
    this.lease.push({
      at: Date.now(),
      holder: lease.spec?.holderIdentity ?? '',
      acquireMs: lease.spec?.acquireTime ? Date.parse(lease.spec.acquireTime) : 0,
      renewMs: lease.spec?.renewTime ? Date.parse(lease.spec.renewTime) : 0,
    });

    for (const pod of await listPods(this.kc, this.runnerNamespace)) this.notePod(pod);
  }

  /**
   * A runner pod seen deleting for the first time: its runner must hold no job on the service then. The
   * runner program completes its job before it exits, and the controller deletes a runner's pod only
   * once it has exited or never took a job, so a job still assigned or running is a busy runner killed.
   */
  private notePod(pod: V1Pod): void {
    const name = pod.metadata?.name ?? '';
    this.runnerPods.add(name);
    if (!this.podRevision.has(name)) {
      const env = pod.spec?.containers.find((c) => c.name === 'runner')?.env;
      this.podRevision.set(name, env?.find((e) => e.name === 'ARO_TEMPLATE_REVISION')?.value);
    }
    if (!pod.metadata?.deletionTimestamp || this.deleting.has(name)) return;
    this.deleting.add(name);
    const jobId = this.sim.runner(name)?.jobId;
    const job = jobId ? this.sim.job(jobId) : undefined;
    if (job && job.state !== 'completed') {
      this.busyKills.push({ pod: name, job: job.jobId, jobState: job.state, seenAt: Date.now() });
    }
  }

  /** Each change of holder, with the time no replica held a renewed lease. */
  handovers(): Handover[] {
    const result: Handover[] = [];
    let holder = '';
    let lastRenew = 0;
    for (const s of this.lease) {
      if (!s.holder) continue; // released: the next holder's acquireTime closes the window
      if (holder && s.holder !== holder) {
        result.push({ from: holder, to: s.holder, noLeaderMs: s.acquireMs - lastRenew, seenAt: s.at });
      }
      holder = s.holder;
      lastRenew = s.renewMs;
    }
    return result;
  }

  /** The longest stretch with no session, among the stretches that began within [from, to]. */
  longestSessionGapMs(from: number, to: number): number {
    return Math.max(
      0,
      ...this.sessionless.filter((g) => g.fromMs >= from && g.fromMs <= to).map((g) => g.toMs - g.fromMs),
    );
  }
}

/** The controller's Lease path, from the LEADER_ELECTION_ID of the Deployment helm installed. */
export async function leasePathOf(kc: KubeConfig, namespace: string, release: string): Promise<string> {
  const list = await getJson<{
    items: {
      spec?: { template?: { spec?: { containers?: { env?: { name: string; value?: string }[] }[] } } };
    }[];
  }>(
    kc,
    `/apis/apps/v1/namespaces/${namespace}/deployments?labelSelector=${encodeURIComponent(`app.kubernetes.io/instance=${release}`)}`,
  );
  const id = list.items
    .flatMap((d) => d.spec?.template?.spec?.containers ?? [])
    .flatMap((c) => c.env ?? [])
    .find((e) => e.name === 'LEADER_ELECTION_ID')?.value;
  if (!id) throw new Error(`the ${release} Deployment sets no LEADER_ELECTION_ID`);
  return `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${id}`;
}

/** Milliseconds, as the report prints them. */
export function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
