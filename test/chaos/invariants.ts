import {
  AutoscalingListener,
  AutoscalingListenerKind,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  EphemeralRunner,
  EphemeralRunnerKind,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
} from '@aro/api';
import type { KubeClient } from '@aro/kube';
import type { JobView, RunningSimulator } from '../../apps/simulator/src';
import type { SandboxReport } from '../sandbox/report';

/** One promise broken in one run: which, and the shape of it (names, ids) to find it again. */
export interface Violation {
  invariant: InvariantName;
  detail: string;
}

export type InvariantName =
  | 'jobs-once' // every job completed, succeeded, started once, on a runner of its own
  | 'busy-pod-kept' // no job's pod deleted while it ran
  | 'max-runners' // live runners never above maxRunners
  | 'drained' // after the uninstall: no registration, runner, pod, secret or scale-set object left
  | 'processes'; // every process exited, every folder removed

export const INVARIANTS: readonly InvariantName[] = [
  'jobs-once',
  'busy-pod-kept',
  'max-runners',
  'drained',
  'processes',
];

const few = (items: readonly string[]): string =>
  items.length > 4 ? `${items.slice(0, 4).join(', ')} and ${items.length - 4} more` : items.join(', ');

/**
 * Every job of the workload completed and succeeded, started once, each on a runner of its own; the
 * jobs a fault broke on purpose (`broken`: the deleted pod's, those GitHub canceled with the scale
 * set) only have to be completed, whatever their result.
 */
export function jobsOnce(jobs: readonly JobView[], broken: ReadonlySet<string>): Violation[] {
  const violations: Violation[] = [];
  const unfinished = jobs.filter((j) => j.state !== 'completed');
  if (unfinished.length > 0) {
    violations.push({
      invariant: 'jobs-once',
      detail: `${unfinished.length} jobs not completed (${few(unfinished.map((j) => `${j.jobId.slice(0, 8)} ${j.state}`))})`,
    });
  }
  const held = jobs.filter((j) => j.state === 'completed' && !broken.has(j.jobId));
  const notSucceeded = held.filter((j) => j.result !== 'succeeded');
  if (notSucceeded.length > 0) {
    violations.push({
      invariant: 'jobs-once',
      detail: `${notSucceeded.length} jobs ended ${few([...new Set(notSucceeded.map((j) => j.result ?? '?'))])} (${few(notSucceeded.map((j) => `${j.jobId.slice(0, 8)} on ${j.runnerName}`))})`,
    });
  }
  const again = held.filter((j) => j.startAttempts !== 1);
  if (again.length > 0) {
    violations.push({
      invariant: 'jobs-once',
      detail: `${again.length} jobs started other than once (${few(again.map((j) => `${j.jobId.slice(0, 8)} x${j.startAttempts}`))})`,
    });
  }
  const byRunner = new Map<string, number>();
  for (const j of jobs) if (j.runnerName) byRunner.set(j.runnerName, (byRunner.get(j.runnerName) ?? 0) + 1);
  const shared = [...byRunner].filter(([, n]) => n > 1).map(([runner, n]) => `${runner} ran ${n}`);
  if (shared.length > 0) {
    violations.push({ invariant: 'jobs-once', detail: `a runner ran more than one job: ${few(shared)}` });
  }
  return violations;
}

/** No runner's pod deleted while it ran a job, but those a fault deleted or whose job GitHub canceled. */
export function busyPodsKept(
  deletedDuringJob: ReadonlyMap<string, string>,
  broken: ReadonlySet<string>,
): Violation[] {
  const deleted = [...deletedDuringJob].filter(([, jobId]) => !broken.has(jobId));
  return deleted.length === 0
    ? []
    : [
        {
          invariant: 'busy-pod-kept',
          detail: `${deleted.length} runner pods deleted during their job: ${few(deleted.map(([pod, job]) => `${pod} (job ${job.slice(0, 8)})`))}`,
        },
      ];
}

export function maxRunnersHeld(
  highWater: { runners: number; pods: number; samples: number },
  maxRunners: number,
): Violation[] {
  const over: string[] = [];
  if (highWater.runners > maxRunners) over.push(`${highWater.runners} live EphemeralRunners`);
  if (highWater.pods > maxRunners) over.push(`${highWater.pods} live runner pods`);
  return over.length === 0
    ? []
    : [
        {
          invariant: 'max-runners',
          detail: `${over.join(' and ')} at once, maxRunners ${maxRunners} (${highWater.samples} samples)`,
        },
      ];
}

/** What the product's API objects and the service hold after the uninstall: all of it is left over. */
export async function productObjectsLeft(
  kube: KubeClient,
  sim: RunningSimulator,
  namespaces: readonly string[],
): Promise<string[]> {
  const left: string[] = [];
  for (const namespace of namespaces) {
    const lists = await Promise.all([
      kube
        .list<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, { namespace })
        .then((l) => ['AutoscalingRunnerSet', l] as const),
      kube
        .list<EphemeralRunnerSet>(EphemeralRunnerSetKind, { namespace })
        .then((l) => ['EphemeralRunnerSet', l] as const),
      kube
        .list<EphemeralRunner>(EphemeralRunnerKind, { namespace })
        .then((l) => ['EphemeralRunner', l] as const),
      kube
        .list<AutoscalingListener>(AutoscalingListenerKind, { namespace })
        .then((l) => ['AutoscalingListener', l] as const),
    ]);
    for (const [kind, objects] of lists) {
      for (const object of objects) left.push(`${kind}/${namespace}/${object.metadata?.name}`);
    }
  }
  for (const scaleSet of sim.scaleSets())
    left.push(`scale set ${scaleSet.id} (${scaleSet.name}) on the service`);
  for (const registration of sim.registrations()) {
    left.push(`registration ${registration.name} (${registration.status}) on the service`);
  }
  return left;
}

export function drained(report: SandboxReport, objectsLeft: readonly string[]): Violation[] {
  const left = [...objectsLeft, ...report.podsAndSecretsLeft, ...report.chartObjectsLeft];
  return left.length === 0
    ? []
    : [{ invariant: 'drained', detail: `left after the uninstall: ${few(left)}` }];
}

export function processesGone(report: SandboxReport): Violation[] {
  const left: string[] = [];
  if (report.processesLeft > 0) left.push(`${report.processesLeft} processes`);
  if (report.tempFoldersLeft > 0) left.push(`${report.tempFoldersLeft} temporary folders`);
  return left.length === 0 ? [] : [{ invariant: 'processes', detail: `${left.join(' and ')} left` }];
}
