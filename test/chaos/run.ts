import { createWriteStream } from 'node:fs';
import type { JobView } from '../../apps/simulator/src';
import type { V1Pod } from '@kubernetes/client-node';
import { PodKind } from '@aro/kube';
import { HighWater } from '../harness/high-water';
import { CONTROLLER_NAMESPACE, RUNNER_NAMESPACE } from '../sandbox/charts';
import type { SandboxOptions } from '../sandbox/options';
import { renderReport, type SandboxReport } from '../sandbox/report';
import { runSandbox, type SandboxParts } from '../sandbox/sandbox';
import { inject, type InjectedFault } from './faults';
import {
  busyPodsKept,
  drained,
  jobsOnce,
  maxRunnersHeld,
  processesGone,
  productObjectsLeft,
  type Violation,
} from './invariants';
import { planFaults, type FaultKind } from './schedule';
import { SessionTakeover } from './session-takeover';
import { scaled } from '../harness/time-scale';

/**
 * How long after the workload a killed holder's session may still be taken over: the sandbox
 * simulator's session idle timeout (15 s, test/sandbox/simulator.ts), after which the standby's create
 * stops meeting 409, plus the listener's backoff steps between creates; at the run's time scale.
 */
const SESSION_TAKEOVER_BOUND_MS = 60_000;

/**
 * The scale set's name in every chaos run: 45 characters, the longest the scale-set chart allows, so
 * that every run also proves a user's longest name works end to end (the listener's service account,
 * `<name>-<hash>-listener`, is then 63 characters and its user name 97).
 */
export const CHAOS_SCALE_SET = 'arc-runner-set-chaos-with-the-longest-name-45';

export interface ChaosOptions {
  jobs: number;
  maxRunners: number;
  /** Seconds each job runs. */
  duration: number;
  /** Jobs queued per second. */
  rate: number;
  minFaults: number;
  maxFaults: number;
  kinds?: readonly FaultKind[];
  /**
   * `pod` (default): a listener pod per scale set; `shared`: the controller chart's shared listener
   * Deployment, whose replica holding the session is what `kill-listener` kills.
   */
  listenerMode?: 'pod' | 'shared';
  /** Give up on a run's workload after this many seconds (its unfinished jobs are a violation). */
  timeoutSeconds: number;
}

export const DEFAULT_CHAOS: ChaosOptions = {
  jobs: 200,
  maxRunners: 20,
  duration: 3,
  rate: 4,
  minFaults: 3,
  maxFaults: 6,
  timeoutSeconds: 900,
};

export interface ChaosRun {
  seed: number;
  listenerMode: 'pod' | 'shared';
  faults: InjectedFault[];
  /** From the first job queued to the last one done. */
  workloadMs: number;
  /** The whole run: bring-up, workload, uninstall, stop. */
  wallMs: number;
  jobs: number;
  violations: Violation[];
  /** The largest number of live runners and runner pods seen at once. */
  highWater: { runners: number; pods: number };
  /** Shared mode: each takeover of the scale set's session after a listener kill (`<owner> after <s> s`). */
  sessionTakeovers: string[];
  report: SandboxReport;
}

/**
 * One seeded run: the sandbox (control plane, simulator, the controller chart's two replicas, the
 * scale-set chart, the listener and runner players) with the seed's faults injected as the jobs get
 * done, and the invariants read from the apiserver and the simulator once it has drained. The
 * sandbox's own output goes to `logPath`.
 */
async function podShapes(parts: SandboxParts): Promise<string[]> {
  const pods = await parts.kube.list<V1Pod>(PodKind, { namespace: RUNNER_NAMESPACE });
  return pods.map((p) => {
    const m = p.metadata;
    const owners = (m?.ownerReferences ?? []).map((o) => `${o.kind}/${o.name}`).join(',') || 'none';
    return (
      `pod ${m?.name} phase ${p.status?.phase ?? '-'} created ${String(m?.creationTimestamp)} ` +
      `deleting ${m?.deletionTimestamp ? String(m.deletionTimestamp) : 'no'} finalizers ${m?.finalizers?.join(',') || 'none'} ` +
      `owners ${owners}; player: ${parts.runners.outcomes.get(m?.name ?? '') ?? 'still playing or never seen'}`
    );
  });
}

export async function runChaos(seed: number, options: ChaosOptions, logPath: string): Promise<ChaosRun> {
  const began = Date.now();
  const planned = planFaults(seed, options);
  const injected: InjectedFault[] = [];
  const violations: Violation[] = [];
  let highWater: HighWater | undefined;
  let objectsLeft: string[] = [];
  let deletedDuringJob = new Map<string, string>();
  let jobViews: JobView[] = [];
  const log = createWriteStream(logPath);
  let takeover: SessionTakeover | undefined;
  const sandboxOptions: SandboxOptions = {
    jobs: options.jobs,
    name: CHAOS_SCALE_SET,
    rate: options.rate,
    maxRunners: options.maxRunners,
    minRunners: 0,
    duration: options.duration,
    failShare: 0,
    exit7Share: 0,
    chaos: false,
    listenerMode: options.listenerMode ?? 'pod',
    keep: false,
    waveSeconds: 5,
    timeoutSeconds: options.timeoutSeconds,
    help: false,
  };
  log.write(`chaos seed ${seed}: ${planned.length} faults planned: ${JSON.stringify(planned)}\n`);
  let report: SandboxReport;
  try {
    report = await runSandbox(
      sandboxOptions,
      { out: log, tty: false, signal: new AbortController().signal },
      {
        async started(parts) {
          highWater = new HighWater(parts.kube, RUNNER_NAMESPACE).start();
          if (parts.sharedListeners) takeover = new SessionTakeover(parts.sim, parts.release);
        },
        async tick(parts, snapshot) {
          const done = snapshot.jobs.succeeded + snapshot.jobs.failed;
          const tookOver = takeover?.look();
          if (tookOver) parts.event(`chaos: the scale set's session taken over by ${tookOver}`);
          while (
            injected.length < planned.length &&
            done >= planned[injected.length].atShareDone * options.jobs
          ) {
            const fault = planned[injected.length];
            const result = await inject(parts, fault);
            injected.push(result);
            if (fault.kind === 'kill-listener' && result.hit) takeover?.killed();
            parts.event(`chaos: ${fault.kind} at ${done} jobs done: ${result.outcome}`);
          }
        },
        async workloadOver(parts) {
          // Runners already made can finish the last jobs without a listener, so a workload may end
          // before the killed holder's session is taken over; the takeover is still awaited here (the
          // scale set exists until the uninstall), within the session timeout plus backoff steps.
          const until = Date.now() + scaled(SESSION_TAKEOVER_BOUND_MS);
          while (takeover?.awaiting() && Date.now() < until) {
            const tookOver = takeover.look();
            if (tookOver) parts.event(`chaos: the scale set's session taken over by ${tookOver}`);
            else await new Promise((resolve) => setTimeout(resolve, 500));
          }
        },
        async drained(parts) {
          highWater?.stop();
          deletedDuringJob = new Map(parts.runners.deletedDuringJob);
          jobViews = parts.sim.jobs().filter((j) => parts.workload.jobIds.includes(j.jobId));
          objectsLeft = await productObjectsLeft(parts.kube, parts.sim, [
            RUNNER_NAMESPACE,
            CONTROLLER_NAMESPACE,
          ]);
          // The shape of what is left, for whoever looks for the cause: each pod's phase, deletion,
          // finalizers and owners, and how its runner's life ended as the player saw it.
          for (const line of await podShapes(parts)) parts.event(`left: ${line}`);
        },
      },
    );
  } finally {
    highWater?.stop();
  }
  log.write(renderReport(report));
  const broken = new Set(injected.flatMap((f) => f.brokenJobs));
  violations.push(
    ...jobsOnce(jobViews, broken),
    ...busyPodsKept(deletedDuringJob, broken),
    ...(highWater ? maxRunnersHeld(highWater, options.maxRunners) : []),
    ...drained(report, objectsLeft),
    ...processesGone(report),
  );
  for (const v of violations) log.write(`VIOLATION ${v.invariant}: ${v.detail}\n`);
  await new Promise<void>((resolve) => log.end(resolve));
  return {
    seed,
    listenerMode: sandboxOptions.listenerMode ?? 'pod',
    faults: injected,
    workloadMs: report.wallMs,
    wallMs: Date.now() - began,
    jobs: options.jobs,
    violations,
    highWater: { runners: highWater?.runners ?? 0, pods: highWater?.pods ?? 0 },
    sessionTakeovers: takeover?.takeovers ?? [],
    report,
  };
}
