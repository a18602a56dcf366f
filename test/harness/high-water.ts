import type { V1Pod } from '@kubernetes/client-node';
import { EphemeralRunner, EphemeralRunnerKind, Labels } from '@aro/api';
import { KubeClient, PodKind } from '@aro/kube';

/**
 * The most live runners and runner pods seen at once in a namespace, sampled every 200 ms for as long
 * as it runs: the bound `maxRunners` must hold at every moment, not only at the end. A runner is live
 * until it has finished (phase Succeeded or Failed) or is being deleted: a finished runner has left
 * the service and its pod has stopped, so it holds no capacity while its object is torn down. The
 * objects in any state are counted too, for the report.
 */
export class HighWater {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  runners = 0;
  pods = 0;
  objects = 0;
  samples = 0;

  constructor(
    private readonly kube: KubeClient,
    private readonly namespace: string,
  ) {}

  start(): this {
    const sample = async (): Promise<void> => {
      const [pods, runners] = await Promise.all([
        this.kube.list<V1Pod>(PodKind, {
          namespace: this.namespace,
          labelSelector: `${Labels.ephemeralRunnerPod}=True`,
        }),
        this.kube.list<EphemeralRunner>(EphemeralRunnerKind, { namespace: this.namespace }),
      ]);
      const ended = (phase: string | undefined): boolean => phase === 'Succeeded' || phase === 'Failed';
      const livePods = pods.filter((p) => !p.metadata?.deletionTimestamp && !ended(p.status?.phase));
      const liveRunners = runners.filter((r) => !r.metadata?.deletionTimestamp && !ended(r.status?.phase));
      this.pods = Math.max(this.pods, livePods.length);
      this.runners = Math.max(this.runners, liveRunners.length);
      this.objects = Math.max(this.objects, runners.length);
      this.samples++;
    };
    const loop = (): void => {
      if (this.stopped) return;
      this.timer = setTimeout(() => {
        sample()
          .catch((err: unknown) => process.stderr.write(`[high-water] ${String(err)}\n`))
          .finally(loop);
      }, 200);
    };
    loop();
    return this;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }
}
