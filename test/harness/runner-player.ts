// A kubelet player for runner pods that also plays the runner inside them: the pod goes Running, the
// runner connects to the Actions service, takes the job the service assigns to it, runs it for a while,
// reports the result and exits. The sandbox uses it for every runner pod; integration tests can use it
// to run a runner set end to end without scripting each pod by hand.
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import { KubeClient, PodKind, isNotFound } from '@aro/kube';
import {
  RUNNER_CONTAINER,
  finishPodDeletion,
  runnerContainerRunning,
  runnerContainerTerminated,
} from './pod-lifecycle';
import { scaled } from './time-scale';
import { waitFor } from './wait-for';

/** How long the pod listing may keep failing (a restarting apiserver, a cut connection) before it is an error. */
const LISTING_FAILS_FOR_MS = 20_000;

/**
 * What the player needs from the Actions service: the simulator's admin operations of the same names
 * (`RunningSimulator` satisfies it in-process; an HTTP client of `/_sim` can as well).
 */
export interface SimulatedRunnerService {
  runnerConnected(name: string): unknown;
  runner(name: string): { jobId: string | null } | undefined;
  job(jobId: string): { state: string } | undefined;
  startJob(name: string): unknown;
  completeJob(jobId: string, result: 'succeeded' | 'failed'): unknown;
  runnerExited(name: string, exitCode: number): void;
}

/** How one runner's life ended, for tests and the sandbox's summary. */
export type RunnerOutcome =
  | 'succeeded' // took a job, the job succeeded, exit 0
  | 'job-failed' // took a job, the job failed, exit 0 (a failing workflow does not crash the runner)
  | 'exit-7' // crashed with exit code 7 while running its job
  | 'no-job' // no job came within jobWaitTimeoutMs: exit 0, as an idle ephemeral runner told to stop
  | 'deleted' // the pod was deleted under the runner
  | 'unregistered'; // no registration to connect to (removed before it started, as in a teardown): exit 1

export interface RunnerPlayerOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  service: SimulatedRunnerService;
  /** How long a job runs; default 3 s. A function draws one per job. */
  jobDurationMs?: number | (() => number);
  /**
   * How long a pod takes from being seen to its runner connecting (image pull, container start, runner
   * start-up); default 0. What a warm runner saves a job.
   */
  startDelayMs?: number;
  /** Share (0..1) of jobs that fail (job result failed, runner exits 0); default 0. */
  failShare?: number;
  /**
   * Runner images whose every job fails (job result failed, runner exits 0): a bad runner image, as a
   * canary roll-out must catch. Read from the pod's `runner` container.
   */
  failingImages?: readonly string[];
  /** Share (0..1) of runners that crash with exit code 7 mid-job; default 0. */
  exit7Share?: number;
  /** How long a connected runner waits for a job before exiting 0 without one; default 60 s. */
  jobWaitTimeoutMs?: number;
  /** Between two looks at the pods and the service; default 250 ms. */
  pollIntervalMs?: number;
  /** Random numbers for the shares; default Math.random (tests pass a fixed sequence). */
  random?: () => number;
  /** Progress and trouble, one line each; default silent. */
  log?: (line: string) => void;
}

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });

function hasRunnerContainer(pod: V1Pod): boolean {
  return (pod.spec?.containers ?? []).some((c) => c.name === RUNNER_CONTAINER);
}

function isTerminal(pod: V1Pod): boolean {
  return pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
}

/**
 * Plays every runner pod of one namespace (pods with a container named `runner`), each pod (by uid)
 * once. Polls rather than watches: it is a test double, and a poll that misses nothing is simpler to
 * trust than a watch that must be resumed.
 */
export class RunnerPlayer {
  private readonly kube: KubeClient;
  private readonly abort = new AbortController();
  private readonly playing = new Map<string, Promise<void>>();
  /** The pods the player has taken on; one whose start failed is dropped from it, to be taken again. */
  private readonly seen = new Set<string>();
  private loop: Promise<void> | undefined;
  /** Outcome of every runner played so far, by pod name (the runner's name). */
  readonly outcomes = new Map<string, RunnerOutcome>();
  /** Errors met while playing (a pod that could not be moved, a service call refused), newest last. */
  readonly errors: string[] = [];
  /** Runners whose pod was deleted while they ran a job, with the job: what must never happen to a busy runner. */
  readonly deletedDuringJob = new Map<string, string>();

  constructor(private readonly options: RunnerPlayerOptions) {
    this.kube = new KubeClient(options.kubeConfig, { userAgent: 'aro-runner-player' });
  }

  start(): this {
    this.loop ??= this.run();
    return this;
  }

  /** Stops taking new pods and waits for the ones in play to end their current step. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
    await Promise.allSettled(this.playing.values());
    this.kube.close();
  }

  /** Runners whose pod is being played right now. */
  get active(): number {
    return this.playing.size;
  }

  private log(line: string): void {
    this.options.log?.(line);
  }

  private async run(): Promise<void> {
    const seen = this.seen;
    const interval = this.options.pollIntervalMs ?? 250;
    // A listing that failed is tried again at the next poll; only one that keeps failing is an error.
    let failingSince: number | undefined;
    while (!this.abort.signal.aborted) {
      try {
        const pods = await this.kube.list<V1Pod>(PodKind, { namespace: this.options.namespace });
        failingSince = undefined;
        for (const pod of pods) {
          const uid = pod.metadata?.uid ?? '';
          const name = pod.metadata?.name ?? '';
          if (!hasRunnerContainer(pod)) continue;
          // The kubelet's part of a graceful deletion, for a pod whose runner has ended: a pod deleted
          // while it ran and marked ended afterwards (its runner's last status write racing the
          // delete) keeps its deletionTimestamp until the kubelet confirms; nobody else ever does.
          // (A pod held by finalizers waits for them, not for the kubelet.)
          const deleting = !!pod.metadata?.deletionTimestamp && !pod.metadata.finalizers?.length;
          if (deleting && !this.playing.has(uid) && (seen.has(uid) || isTerminal(pod))) {
            await finishPodDeletion(this.options.namespace, name, { timeoutMs: 10_000 }).catch((err: Error) =>
              this.errors.push(`finishing the deletion of ${this.options.namespace}/${name}: ${err.message}`),
            );
            continue;
          }
          if (seen.has(uid)) continue;
          if (isTerminal(pod)) continue; // played by an earlier player, or failed before we saw it
          seen.add(uid);
          const image = pod.spec?.containers.find((c) => c.name === RUNNER_CONTAINER)?.image ?? '';
          const play = this.play(name, uid, image).finally(() => this.playing.delete(uid));
          this.playing.set(uid, play);
        }
      } catch (err) {
        const line = `listing pods in ${this.options.namespace}: ${(err as Error).message}`;
        this.log(line);
        failingSince ??= Date.now();
        if (Date.now() - failingSince > scaled(LISTING_FAILS_FOR_MS)) {
          this.errors.push(`${line} (failing for ${Date.now() - failingSince} ms)`);
          failingSince = Date.now();
        }
      }
      await sleep(interval, this.abort.signal);
    }
  }

  /**
   * The pod by name, unless it was replaced by another pod of the same name or is gone. Only a NotFound
   * or another uid say "gone": a read that failed (a timeout or a reset connection on a loaded machine)
   * says nothing about the pod and is asked again. Taken for a deletion, it would stop the runner on
   * the service and leave its pod running with nobody to finish it once it is really deleted: a pod
   * left for good after its runner went.
   */
  private async current(name: string, uid: string): Promise<V1Pod | undefined> {
    const { namespace } = this.options;
    const look = await waitFor(
      async () => {
        try {
          const pod = await this.kube.get<V1Pod>(PodKind, namespace, name);
          return { pod: pod.metadata?.uid === uid ? pod : undefined };
        } catch (err) {
          if (isNotFound(err)) return { pod: undefined };
          throw err;
        }
      },
      { description: `a read of pod ${namespace}/${name} that answers`, timeoutMs: 20_000, intervalMs: 250 },
    );
    return look.pod;
  }

  private draw(): number {
    return (this.options.random ?? Math.random)();
  }

  private async play(name: string, uid: string, image = ''): Promise<void> {
    const { namespace, service } = this.options;
    const signal = this.abort.signal;
    const interval = this.options.pollIntervalMs ?? 250;
    try {
      if (this.options.startDelayMs) await sleep(this.options.startDelayMs, signal);
      if (signal.aborted) return;
      try {
        await runnerContainerRunning(namespace, name);
      } catch (err) {
        // The pod could not be bound or marked running (the apiserver restarting, a read that timed
        // out): nothing has happened on the service yet, so the next look takes the pod on again, as
        // a kubelet retries a pod it could not start. Abandoned, it would stay Pending for good and its
        // runner with it (chaos seed 10: the apiserver killed just after the pod was made).
        this.seen.delete(uid);
        this.log(`runner ${name}: could not start its pod (${(err as Error).message}); trying again`);
        return;
      }
      // The registration exists before the pod (the controller puts its JIT config in the pod's
      // secret), so connecting can only fail once the controller has removed it: a runner set torn
      // down, or scaled down, before this runner started. A real runner then fails to start.
      try {
        service.runnerConnected(name);
      } catch (err) {
        return await this.unregistered(name, uid, err);
      }
      const waitUntil = Date.now() + (this.options.jobWaitTimeoutMs ?? 60_000);
      let jobId: string | null = null;
      while (!signal.aborted && Date.now() < waitUntil) {
        const pod = await this.current(name, uid);
        if (!pod || pod.metadata?.deletionTimestamp) return await this.deleted(name, uid, null);
        const registration = service.runner(name);
        // Gone from the service while waiting (its scale set deleted there): a real runner loses its
        // connection and exits non-zero; the controller then deals with it.
        if (!registration) return await this.unregistered(name, uid, new Error('registration removed'));
        jobId = registration.jobId ?? null;
        if (jobId) break;
        await sleep(interval, signal);
      }
      if (!jobId) {
        service.runnerExited(name, 0);
        await runnerContainerTerminated(namespace, name, 0);
        this.outcomes.set(name, 'no-job');
        this.log(`runner ${name}: no job came; exited 0`);
        return;
      }
      // An assigned job that the service did not start by itself (no autoStartJobs) is started
      // by the runner, as the real runner does when it receives its job.
      if (service.job(jobId)?.state !== 'running') service.startJob(name);
      const duration = this.options.jobDurationMs ?? 3_000;
      const runFor = typeof duration === 'function' ? duration() : duration;
      const crash = this.draw() < (this.options.exit7Share ?? 0);
      const fail =
        !crash &&
        (this.draw() < (this.options.failShare ?? 0) || !!this.options.failingImages?.includes(image));
      const runUntil = Date.now() + (crash ? runFor / 2 : runFor);
      while (Date.now() < runUntil) {
        const pod = await this.current(name, uid);
        if (!pod || pod.metadata?.deletionTimestamp) return await this.deleted(name, uid, jobId);
        if (signal.aborted) break;
        await sleep(Math.min(interval, Math.max(0, runUntil - Date.now())), signal);
      }
      if (crash) {
        service.runnerExited(name, 7);
        await runnerContainerTerminated(namespace, name, 7);
        this.outcomes.set(name, 'exit-7');
        this.log(`runner ${name}: crashed with exit code 7 during job ${jobId}`);
        return;
      }
      if (service.job(jobId)?.state === 'running') service.completeJob(jobId, fail ? 'failed' : 'succeeded');
      // A registration dropped meanwhile (its scale set deleted on the service, the job canceled)
      // leaves nothing to deregister.
      if (service.runner(name)) service.runnerExited(name, 0);
      await runnerContainerTerminated(namespace, name, 0);
      this.outcomes.set(name, fail ? 'job-failed' : 'succeeded');
      this.log(`runner ${name}: job ${jobId} ${fail ? 'failed' : 'succeeded'}; exited 0`);
    } catch (err) {
      // A pod deleted between two steps (a scale-down or teardown racing the player's own status
      // writes) ended the runner as a deletion would; only a pod still there makes this an error.
      const left = await this.current(name, uid).catch((e: unknown) => e);
      if (left === undefined) {
        this.outcomes.set(name, 'deleted');
        this.log(`runner ${name}: pod gone under the player (${(err as Error).message})`);
        return;
      }
      const unread = left instanceof Error ? `; the pod could not be read either: ${left.message}` : '';
      this.errors.push(`runner ${namespace}/${name}: ${(err as Error).message}${unread}`);
    }
  }

  /**
   * The runner found no registration to connect to: it exits 1, as a real runner whose registration
   * is gone does, or, its pod already being deleted, stops and the player finishes the deletion.
   */
  private async unregistered(name: string, uid: string, err: unknown): Promise<void> {
    const { namespace } = this.options;
    this.outcomes.set(name, 'unregistered');
    this.log(`runner ${name}: could not connect (${(err as Error).message}); exiting`);
    const pod = await this.current(name, uid);
    if (!pod) return;
    if (pod.metadata?.deletionTimestamp) {
      await runnerContainerTerminated(namespace, name, 1).catch(() => undefined);
      await finishPodDeletion(namespace, name);
      return;
    }
    await runnerContainerTerminated(namespace, name, 1);
  }

  /**
   * The pod was deleted while the runner lived (scale-down of an idle runner, or a cleanup): the
   * runner stops as on SIGTERM and the player finishes the deletion as the kubelet would.
   */
  private async deleted(name: string, uid: string, jobId: string | null): Promise<void> {
    if (jobId) this.deletedDuringJob.set(name, jobId);
    const { namespace, service } = this.options;
    try {
      service.runnerExited(name, jobId ? 143 : 0);
    } catch {
      // Already deregistered: the controller removed it first, which is what a deletion does.
    }
    this.outcomes.set(name, 'deleted');
    if (await this.current(name, uid)) {
      // The status write may meet the pod already gone; the deletion must be finished, or the pod stays
      // with its deletionTimestamp for good: a failure here goes to `errors` (through play's catch).
      await runnerContainerTerminated(namespace, name, jobId ? 143 : 0).catch(() => undefined);
      await finishPodDeletion(namespace, name);
    }
    this.log(`runner ${name}: pod deleted${jobId ? ` during job ${jobId}` : ''}`);
  }
}
