import { API_VERSION, EphemeralRunner, EphemeralRunnerKind } from '@aro/api';
import type { KubeClient } from '@aro/kube';
import type { RunningSimulator } from '../../apps/simulator/src';

/**
 * Runner mode's stand-in for the listener and the EphemeralRunnerSet, used while the scale-set half of
 * the product is not in the build. It does what those two do for a scale set, in the simplest form:
 *
 * - desired runners = min(maxRunners, jobs being run or assigned + jobs still queued), and it creates
 *   EphemeralRunners until as many exist (it never deletes one: runners end by themselves);
 * - a registered runner that is online and idle gets the oldest queued job (what the service does
 *   for a listener that acquired the job).
 *
 * Everything past the EphemeralRunner's creation (registration, pod, secret, deregistration, cleanup)
 * is the product's EphemeralRunner controller.
 */
export class StandInScaler {
  private counter = 0;
  /** EphemeralRunners this stand-in created or deleted: its own writes, left out of the product's count. */
  writes = 0;
  desired = 0;

  constructor(
    private readonly options: {
      kube: KubeClient;
      sim: RunningSimulator;
      namespace: string;
      scaleSetId: number;
      configUrl: string;
      secretName: string;
      maxRunners: number;
      log: (line: string) => void;
    },
  ) {}

  /** One pass: bind idle runners to queued jobs, then scale up to the desired count. */
  async tick(): Promise<void> {
    const { sim, scaleSetId, kube, namespace, maxRunners } = this.options;
    const queued = sim
      .jobs()
      .filter((j) => j.state === 'queued' && (j.scaleSetId === null || j.scaleSetId === scaleSetId))
      .sort((a, b) => a.runnerRequestId - b.runnerRequestId);
    const mine = sim.registrations().filter((r) => r.scaleSetId === scaleSetId);
    for (const runner of mine.filter((r) => r.status === 'idle')) {
      const job = queued.shift();
      if (!job) break;
      sim.assignJobToRunner(runner.name, job.jobId);
    }
    const busy = sim.registrations().filter((r) => r.scaleSetId === scaleSetId && r.jobId !== null).length;
    this.desired = Math.min(maxRunners, busy + queued.length);
    const runners = await kube.list<EphemeralRunner>(EphemeralRunnerKind, { namespace });
    // As the EphemeralRunnerSet does: finished runners (Succeeded, Failed, and Outdated: the runner
    // exited 7, "version deprecated") do not count and are deleted.
    let alive = 0;
    for (const r of runners) {
      if (r.metadata?.deletionTimestamp) continue;
      if (r.status?.phase === 'Succeeded' || r.status?.phase === 'Failed' || r.status?.phase === 'Outdated') {
        await kube.delete(EphemeralRunnerKind, namespace, r.metadata?.name ?? '').catch(() => undefined);
        this.writes += 1;
        this.options.log(`stand-in: deleted ${r.status.phase} runner ${namespace}/${r.metadata?.name}`);
        continue;
      }
      alive += 1;
    }
    for (let i = alive; i < this.desired; i++) {
      await kube.create<EphemeralRunner>(
        EphemeralRunnerKind,
        this.runner(`sandbox-runner-${++this.counter}`),
      );
      this.writes += 1;
    }
  }

  private runner(name: string): EphemeralRunner {
    const { namespace, scaleSetId, configUrl, secretName } = this.options;
    return {
      apiVersion: API_VERSION,
      kind: 'EphemeralRunner',
      metadata: {
        name,
        namespace,
        labels: {
          'actions.github.com/scale-set-name': 'sandbox',
          'actions.github.com/scale-set-namespace': namespace,
        },
      },
      spec: {
        githubConfigUrl: configUrl,
        githubConfigSecret: secretName,
        runnerScaleSetId: scaleSetId,
        spec: {
          restartPolicy: 'Never',
          containers: [
            {
              name: 'runner',
              image: 'ghcr.io/actions/actions-runner:latest',
              command: ['/home/runner/run.sh'],
            },
          ],
        },
      },
    };
  }
}
