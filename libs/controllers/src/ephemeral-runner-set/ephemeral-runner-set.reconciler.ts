import type { V1Secret } from '@kubernetes/client-node';
import {
  Annotations,
  EPHEMERAL_RUNNER_SET_FINALIZER,
  EphemeralRunner,
  EphemeralRunnerKind,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
  EphemeralRunnerSetPhase,
  EphemeralRunnerSetStatus,
  Labels,
  ScaleSetConditionTypes,
  ScaleSetReasons,
  hasJob,
  integrityHash,
  runnerProxySecretName,
} from '@aro/api';
import { isJobStillRunning, isRunnerNotFound, isNotFound as isActionsNotFound } from '@aro/actions';
import {
  KubeClient,
  Reader,
  Reconciler,
  ReconcileContext,
  Request,
  Result,
  SecretKind,
  isNotFound,
} from '@aro/kube';
import type { Logger } from '@aro/observability';
import { SecretResolver, configHolderOfRunnerSet } from '@aro/secrets';
import { isDeepStrictEqual } from 'node:util';
import type { EventRecorder } from '../events/event-recorder';
import type { EphemeralRunnerSetMetrics } from './runner-set-metrics';
import { RunnerSetExpectations } from './runner-set-expectations';
import { buildEphemeralRunner, buildRunnerProxySecret, proxySecretData } from './runner-set-resources';
import { RunnersByState, idleRunnerCandidates, runnersByState } from './runner-states';
import {
  describeError,
  exponentialBackoffMs,
  finalizersPatch,
  findCondition,
  hasFinalizer,
  isControlledBy,
  scaleSetMetricLabels,
  setCondition,
  withFinalizer,
  withoutFinalizer,
} from './scale-set-common';

export interface EphemeralRunnerSetReconcilerOptions {
  /** Label keys with these prefixes are not copied from the set onto its runners. */
  excludeLabelPropagationPrefixes?: readonly string[];
  /** First wait before a Failed runner is replaced; doubles per failure in a row. */
  failedRunnerBackoffBaseMs?: number;
  failedRunnerBackoffMaxMs?: number;
  /** How often a set being deleted looks again while runners with a job finish. */
  deletionPollMs?: number;
  /** Deadline of one Actions service call. */
  actionsCallTimeoutMs?: number;
  /** Whether to publish the gha_controller_*_ephemeral_runners gauges (upstream: metrics address not "0"). */
  publishMetrics?: boolean;
}

export interface EphemeralRunnerSetReconcilerDeps {
  client: KubeClient;
  cache: Reader;
  resolver: SecretResolver;
  metrics?: EphemeralRunnerSetMetrics;
  events?: EventRecorder;
  logger: Logger;
  now?: () => number;
}

const done: Result = {};
const requeueAfter = (ms: number): Result => ({ requeueAfterMs: Math.max(1, Math.ceil(ms)) });

/** Replacement of Failed runners: how many are owed, and when the next may be made. */
interface FailureBackoff {
  failuresInARow: number;
  notBefore: number;
  owed: number;
}

/**
 * The EphemeralRunnerSet reconciler: keeps `spec.replicas` runners, as the listener asks, without
 * ever taking a runner that has or may have a job.
 *
 * Scaling follows upstream's patch protocol. The listener patches `{replicas, patchID}`; each runner
 * records the patchID it was created for. A patch not yet acted on (its ID is above every runner's)
 * creates what is missing; once acted on, the same patch is not acted on again, so a runner that ends
 * after its job is not replaced until the listener says more are needed. `patchID` 0 is the listener
 * saying "nothing happened, converge": it creates what is missing and also removes surplus idle runners.
 * A positive patch never scales down: the listener counts busy runners, and a runner leaves by itself
 * after its job.
 *
 * Better than upstream: a Failed runner is deleted at once and replaced (with backoff), instead of
 * holding a slot of `replicas` until a human deletes it; a finished one is removed at once; an Outdated
 * runner stops the set from creating more (phase and condition say why), and nothing loops.
 *
 * The set's spec is the listener's: this controller never patches it, only its status, finalizer and
 * integrity-hash annotation.
 */
export class EphemeralRunnerSetReconciler implements Reconciler {
  private readonly expectations: RunnerSetExpectations;
  private readonly failureBackoff = new Map<string, FailureBackoff>();
  private readonly opts: Required<EphemeralRunnerSetReconcilerOptions>;
  private readonly now: () => number;

  constructor(
    private readonly deps: EphemeralRunnerSetReconcilerDeps,
    options: EphemeralRunnerSetReconcilerOptions = {},
  ) {
    this.now = deps.now ?? Date.now;
    this.expectations = new RunnerSetExpectations(30_000, this.now);
    this.opts = {
      excludeLabelPropagationPrefixes: options.excludeLabelPropagationPrefixes ?? [],
      failedRunnerBackoffBaseMs: options.failedRunnerBackoffBaseMs ?? 5_000,
      failedRunnerBackoffMaxMs: options.failedRunnerBackoffMaxMs ?? 5 * 60_000,
      deletionPollMs: options.deletionPollMs ?? 5_000,
      actionsCallTimeoutMs: options.actionsCallTimeoutMs ?? 30_000,
      publishMetrics: options.publishMetrics ?? true,
    };
  }

  async reconcile(req: Request, { signal, log }: ReconcileContext): Promise<Result> {
    const key = `${req.namespace}/${req.name}`;
    let set: EphemeralRunnerSet;
    try {
      set = await this.deps.cache.get<EphemeralRunnerSet>(EphemeralRunnerSetKind, req.namespace, req.name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      this.deps.metrics?.forget(key);
      this.expectations.forget(key);
      this.failureBackoff.delete(key);
      return done;
    }

    if (set.metadata?.deletionTimestamp) return this.finalize(set, key, signal, log);

    if (!hasFinalizer(set, EPHEMERAL_RUNNER_SET_FINALIZER)) {
      set = await this.deps.client.mergePatch<EphemeralRunnerSet>(
        EphemeralRunnerSetKind,
        req.namespace,
        req.name,
        finalizersPatch(set, withFinalizer(set, EPHEMERAL_RUNNER_SET_FINALIZER)),
      );
      log.debug('Added the finalizer');
    }

    const runners = await this.ownedRunners(set);
    const waitMs = this.expectations.pendingMs(key, runners);
    if (waitMs > 0) {
      // Our last pass's creations or deletions are not in the cache yet: counting now would double them.
      log.debug('Waiting for the cache to show the runners created or deleted last pass');
      return requeueAfter(Math.min(waitMs, 1_000));
    }
    const states = runnersByState(runners);
    this.publishCounts(set, key, states);

    const hash = integrityHash(set.spec.ephemeralRunnerSpec);
    if (set.metadata?.annotations?.[Annotations.integrityHash] !== hash) {
      return this.rollOutSpec(set, key, states, hash, signal, log);
    }

    await this.reconcileProxySecret(set, signal, log);

    const outdated = states.outdated.length > 0 || set.status?.phase === EphemeralRunnerSetPhase.Outdated;
    if (outdated) return this.rest(set, key, states, signal, log);

    let result: Result = done;
    await this.deleteFinished(set, key, states, log);
    if (states.failed.length > 0) result = await this.replaceFailed(set, key, states, log);
    const backoffEntry = this.failureBackoff.get(key);
    if (backoffEntry && states.running.some((r) => r.status?.ready)) {
      // A runner came up: the template works, so failures no longer slow replacements down.
      backoffEntry.failuresInARow = 0;
      backoffEntry.notBefore = 0;
    }

    const total = states.pending.length + states.running.length;
    const replicas = Math.max(0, set.spec.replicas ?? 0);
    const patchId = set.spec.patchID ?? 0;
    const newPatch = patchId === 0 || patchId !== states.latestPatchId;
    const backoff = this.failureBackoff.get(key);
    let toCreate = 0;
    if (newPatch) {
      toCreate = replicas - total;
      if (backoff) backoff.owed = 0;
    } else if (backoff && backoff.owed > 0) {
      toCreate = Math.min(backoff.owed, replicas - total);
    }
    if (toCreate > 0 && backoff && this.now() < backoff.notBefore) {
      log.info('Holding back new runners after Failed ones', {
        failuresInARow: backoff.failuresInARow,
        waitMs: backoff.notBefore - this.now(),
      });
      result = requeueAfter(backoff.notBefore - this.now());
      toCreate = 0;
    }
    if (toCreate > 0) {
      await this.createRunners(set, key, toCreate, log);
      if (backoff) backoff.owed = Math.max(0, backoff.owed - toCreate);
    } else if (newPatch && patchId === 0 && total > replicas) {
      await this.deleteIdleRunners(set, key, states, total - replicas, signal, log);
    }

    await this.updateStatus(set, states, EphemeralRunnerSetPhase.Running, log);
    return result;
  }

  /** Runners this set controls, from the cache. */
  private async ownedRunners(set: EphemeralRunnerSet): Promise<EphemeralRunner[]> {
    const all = await this.deps.cache.list<EphemeralRunner>(EphemeralRunnerKind, {
      namespace: set.metadata?.namespace,
    });
    return all.filter((r) => isControlledBy(r, set));
  }

  private publishCounts(set: EphemeralRunnerSet, key: string, states: RunnersByState): void {
    if (!this.opts.publishMetrics || !this.deps.metrics) return;
    const labels = scaleSetMetricLabels(
      set.metadata?.labels?.[Labels.scaleSetName] ?? set.metadata?.name ?? '',
      set.metadata?.labels?.[Labels.scaleSetNamespace] ?? set.metadata?.namespace ?? '',
      set.spec.ephemeralRunnerSpec?.githubConfigUrl,
    );
    this.deps.metrics.set(key, labels, {
      pending: states.pending.length,
      running: states.running.length,
      failed: states.failed.length,
    });
  }

  /**
   * The runner spec changed: idle runners, built from the old spec, go (registration first), so that
   * the ones the listener asks for next are built from the new one. Runners with a job finish it.
   * The hash is stored once that is done, and an Outdated set gets a fresh start: a new spec is how
   * a person fixes a deprecated runner image.
   */
  private async rollOutSpec(
    set: EphemeralRunnerSet,
    key: string,
    states: RunnersByState,
    hash: string,
    signal: AbortSignal,
    log: Logger,
  ): Promise<Result> {
    log.info('The runner spec changed; replacing idle runners', { integrityHash: hash });
    const { releasedIdle } = await this.releaseAndDeleteAll(set, key, states, signal, log);
    await this.reconcileProxySecret(set, signal, log);
    // The idle runners let go for the new spec are owed back at once: the listener counted them as
    // capacity and will not send a new patch just because the template changed (upstream waits for one).
    // A second pass before the cache shows the stored hash finds those runners already deleting and
    // releases none: it must not forget what the first pass owes (creation is capped by replicas).
    const owedBefore = this.failureBackoff.get(key)?.owed ?? 0;
    this.failureBackoff.set(key, {
      failuresInARow: 0,
      notBefore: 0,
      owed: Math.max(owedBefore, releasedIdle),
    });
    // Status before the hash: the hash's watch event must find the phase already reset, or the next
    // pass would take the set for Outdated still.
    await this.updateStatus(set, states, EphemeralRunnerSetPhase.Running, log, {
      status: 'True',
      reason: 'SpecUpdated',
      message: 'The runner spec changed; new runners use it',
    });
    await this.deps.client.mergePatch(
      EphemeralRunnerSetKind,
      set.metadata?.namespace ?? '',
      set.metadata?.name ?? '',
      {
        metadata: { annotations: { [Annotations.integrityHash]: hash } },
      },
    );
    return done;
  }

  /**
   * A runner reported that its version is deprecated: every runner of this spec will. The set stops
   * creating runners, lets busy ones finish, removes the rest, and says why in its phase and a
   * condition. It stays so until its runner spec changes (upstream: deleted and recreated by the
   * AutoscalingRunnerSet in a loop, #4600).
   */
  private async rest(
    set: EphemeralRunnerSet,
    key: string,
    states: RunnersByState,
    signal: AbortSignal,
    log: Logger,
  ): Promise<Result> {
    if (set.status?.phase !== EphemeralRunnerSetPhase.Outdated) {
      log.warn('A runner reported a deprecated runner version; the set stops creating runners');
      this.deps.events?.record(
        set,
        'Warning',
        ScaleSetReasons.outdated,
        'A runner exited with the "version deprecated" code: no new runners are created until the runner image is updated',
      );
    }
    await this.releaseAndDeleteAll(set, key, states, signal, log);
    await this.updateStatus(set, states, EphemeralRunnerSetPhase.Outdated, log, {
      status: 'False',
      reason: ScaleSetReasons.outdated,
      message: 'A runner reported a deprecated runner version; update the runner image in the template',
    });
    return done;
  }

  /** Finished runners are removed at once: they hold nothing, and upstream's wait for the next patch only delays their cleanup. */
  private async deleteFinished(
    set: EphemeralRunnerSet,
    key: string,
    states: RunnersByState,
    log: Logger,
  ): Promise<void> {
    for (const runner of states.succeeded) await this.deleteRunner(set, key, runner, log, 'finished');
  }

  /**
   * A Failed runner will not start (its pod was refused, or it was marked Failed for another reason
   * the ER controller gives up on). It is deleted, not counted, and replaced, so it never holds a slot
   * of `replicas` (upstream #3014, #4258); the replacement waits out an exponential backoff so that a
   * template that is simply invalid does not turn into a create/fail loop.
   */
  private async replaceFailed(
    set: EphemeralRunnerSet,
    key: string,
    states: RunnersByState,
    log: Logger,
  ): Promise<Result> {
    const backoff = this.failureBackoff.get(key) ?? { failuresInARow: 0, notBefore: 0, owed: 0 };
    for (const runner of states.failed) {
      await this.deleteRunner(set, key, runner, log, 'failed');
      backoff.failuresInARow += 1;
      backoff.owed += 1;
      this.deps.events?.record(
        set,
        'Warning',
        ScaleSetReasons.runnerFailed,
        `Runner ${runner.metadata?.name} failed (${runner.status?.reason ?? 'no reason'}: ${runner.status?.message ?? ''}); it is deleted and replaced`,
      );
    }
    const waitMs = exponentialBackoffMs(
      backoff.failuresInARow,
      this.opts.failedRunnerBackoffBaseMs,
      this.opts.failedRunnerBackoffMaxMs,
    );
    backoff.notBefore = this.now() + waitMs;
    this.failureBackoff.set(key, backoff);
    return requeueAfter(waitMs);
  }

  private async createRunners(
    set: EphemeralRunnerSet,
    key: string,
    count: number,
    log: Logger,
  ): Promise<void> {
    log.info('Creating runners', { count, replicas: set.spec.replicas ?? 0, patchID: set.spec.patchID ?? 0 });
    for (let i = 0; i < count; i++) {
      const created = await this.deps.client.create<EphemeralRunner>(
        EphemeralRunnerKind,
        buildEphemeralRunner(set, this.opts.excludeLabelPropagationPrefixes),
      );
      this.expectations.created(key, created.metadata?.name ?? '');
    }
  }

  /**
   * Removes up to `count` idle runners, registration first: once the service has dropped a runner it
   * can no longer be given a job, so the delete that follows cannot kill one. A runner the service
   * says is executing a job stays (the listener's job-started patch may simply not have arrived).
   */
  private async deleteIdleRunners(
    set: EphemeralRunnerSet,
    key: string,
    states: RunnersByState,
    count: number,
    signal: AbortSignal,
    log: Logger,
  ): Promise<void> {
    let deleted = 0;
    const failures: string[] = [];
    for (const runner of idleRunnerCandidates(states)) {
      if (deleted >= count) break;
      const released = await this.releaseRegistration(set, runner, signal, log);
      if (released === 'busy') continue;
      if (released === 'error') {
        failures.push(runner.metadata?.name ?? '');
        continue;
      }
      await this.deleteRunner(set, key, runner, log, 'scale-down');
      deleted++;
    }
    log.info('Scaled down idle runners', { wanted: count, deleted });
    if (failures.length > 0) {
      throw new Error(
        `EphemeralRunnerSet ${key}: could not remove the registrations of runners ${failures.join(', ')}`,
      );
    }
  }

  /**
   * Every runner without a job goes (deletion, spec change, outdated): done ones at once, idle ones
   * after their registration. Unregistered runners are deleted directly: their own finalizer removes
   * whatever registration they get. Runners with a job are left to finish it.
   */
  private async releaseAndDeleteAll(
    set: EphemeralRunnerSet,
    key: string,
    states: RunnersByState,
    signal: AbortSignal,
    log: Logger,
  ): Promise<{ withJob: number; releasedIdle: number }> {
    let remaining = 0;
    let releasedIdle = 0;
    for (const runner of [...states.succeeded, ...states.failed, ...states.outdated]) {
      await this.deleteRunner(set, key, runner, log, 'done');
    }
    for (const runner of [...states.pending, ...states.running]) {
      if (hasJob(runner)) {
        remaining++;
        continue;
      }
      if ((runner.status?.runnerId ?? 0) !== 0) {
        const released = await this.releaseRegistration(set, runner, signal, log);
        if (released !== 'released') {
          remaining++;
          continue;
        }
      }
      await this.deleteRunner(set, key, runner, log, 'cleanup');
      releasedIdle++;
    }
    return { withJob: remaining, releasedIdle };
  }

  private async releaseRegistration(
    set: EphemeralRunnerSet,
    runner: EphemeralRunner,
    signal: AbortSignal,
    log: Logger,
  ): Promise<'released' | 'busy' | 'error'> {
    const runnerId = runner.status?.runnerId ?? 0;
    try {
      const client = await this.deps.resolver.getActionsClient(configHolderOfRunnerSet(set), signal);
      await client.removeRunner(runnerId, {
        signal: AbortSignal.any([signal, AbortSignal.timeout(this.opts.actionsCallTimeoutMs)]),
      });
      return 'released';
    } catch (err) {
      if (isJobStillRunning(err)) {
        log.info('Keeping a runner the service says is executing a job', {
          runner: runner.metadata?.name,
          runnerId,
        });
        return 'busy';
      }
      if (isRunnerNotFound(err) || isActionsNotFound(err)) return 'released';
      log.warn('Could not remove a runner registration', {
        runner: runner.metadata?.name,
        runnerId,
        err: describeError(err),
      });
      return 'error';
    }
  }

  private async deleteRunner(
    set: EphemeralRunnerSet,
    key: string,
    runner: EphemeralRunner,
    log: Logger,
    why: string,
  ): Promise<void> {
    const name = runner.metadata?.name ?? '';
    try {
      await this.deps.client.delete(EphemeralRunnerKind, set.metadata?.namespace ?? '', name, {
        preconditions: { uid: runner.metadata?.uid },
      });
      this.expectations.deleted(key, name);
      log.debug('Deleted a runner', { runner: name, why, phase: runner.status?.phase });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  /**
   * The Secret the runner pods read their proxy variables from, kept equal to the set's proxy with
   * credentials resolved; deleted when the set no longer has a proxy.
   */
  private async reconcileProxySecret(
    set: EphemeralRunnerSet,
    signal: AbortSignal,
    log: Logger,
  ): Promise<void> {
    const namespace = set.metadata?.namespace ?? '';
    const name = runnerProxySecretName(set.metadata?.name ?? '', namespace);
    const proxy = set.spec.ephemeralRunnerSpec?.proxy;
    let existing: V1Secret | undefined;
    try {
      existing = await this.deps.client.get<V1Secret>(SecretKind, namespace, name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    if (!proxy) {
      if (existing) await this.deleteIgnoringNotFound(SecretKind, namespace, name);
      return;
    }
    const settings = await this.deps.resolver.getProxySettings(configHolderOfRunnerSet(set), signal);
    const data = proxySecretData(settings);
    const desired = buildRunnerProxySecret(set, data);
    if (!existing) {
      await this.deps.client.create(SecretKind, desired);
      log.info('Created the runner proxy secret', { secret: name });
      return;
    }
    const current = Object.fromEntries(
      Object.entries(existing.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
    );
    if (!isDeepStrictEqual(current, data)) {
      await this.deps.client.replace(SecretKind, {
        ...desired,
        metadata: { ...desired.metadata, resourceVersion: existing.metadata?.resourceVersion },
      });
      log.info('Updated the runner proxy secret', { secret: name });
    }
  }

  private async deleteIgnoringNotFound(
    kind: typeof SecretKind,
    namespace: string,
    name: string,
  ): Promise<void> {
    try {
      await this.deps.client.delete(kind, namespace, name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  /**
   * Deleting the set: every runner goes, registration first; runners with a job are waited for (they
   * leave by themselves when it ends). Then the proxy secret, then the finalizer.
   */
  private async finalize(
    set: EphemeralRunnerSet,
    key: string,
    signal: AbortSignal,
    log: Logger,
  ): Promise<Result> {
    if (!hasFinalizer(set, EPHEMERAL_RUNNER_SET_FINALIZER)) return done;
    const runners = await this.ownedRunners(set);
    const states = runnersByState(runners);
    this.publishCounts(set, key, states);
    const { withJob } = await this.releaseAndDeleteAll(set, key, states, signal, log);
    if (runners.length > 0) {
      // Only an empty list is proof: a runner deleted just now still releases its registration.
      log.info('Waiting for the runners of a deleted set to go', { runners: runners.length, withJob });
      return requeueAfter(this.opts.deletionPollMs);
    }
    const namespace = set.metadata?.namespace ?? '';
    await this.deleteIgnoringNotFound(
      SecretKind,
      namespace,
      runnerProxySecretName(set.metadata?.name ?? '', namespace),
    );
    try {
      await this.deps.client.mergePatch(
        EphemeralRunnerSetKind,
        namespace,
        set.metadata?.name ?? '',
        finalizersPatch(set, withoutFinalizer(set, EPHEMERAL_RUNNER_SET_FINALIZER)),
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    this.deps.metrics?.forget(key);
    this.expectations.forget(key);
    this.failureBackoff.delete(key);
    log.info('Removed the finalizer of a deleted set');
    return done;
  }

  /** Writes the status when any counted value, the phase or the condition changed; never otherwise. */
  private async updateStatus(
    set: EphemeralRunnerSet,
    states: RunnersByState,
    phase: EphemeralRunnerSetPhase,
    log: Logger,
    versionCondition?: { status: 'True' | 'False'; reason: string; message: string },
  ): Promise<void> {
    const current = set.status;
    let conditions = current?.conditions;
    if (versionCondition) {
      const existing = findCondition(conditions, ScaleSetConditionTypes.runnerVersionCurrent);
      if (
        !existing ||
        existing.status !== versionCondition.status ||
        existing.reason !== versionCondition.reason ||
        existing.message !== versionCondition.message
      ) {
        conditions = setCondition(
          conditions,
          { type: ScaleSetConditionTypes.runnerVersionCurrent, ...versionCondition },
          new Date(this.now()),
        );
      }
    }
    const desired: EphemeralRunnerSetStatus = {
      currentReplicas: states.pending.length + states.running.length,
      pendingEphemeralRunners: states.pending.length,
      runningEphemeralRunners: states.running.length,
      failedEphemeralRunners: states.failed.length,
      phase,
      ...(conditions ? { conditions } : {}),
    };
    const unchanged =
      current !== undefined &&
      current.currentReplicas === desired.currentReplicas &&
      (current.pendingEphemeralRunners ?? 0) === desired.pendingEphemeralRunners &&
      (current.runningEphemeralRunners ?? 0) === desired.runningEphemeralRunners &&
      (current.failedEphemeralRunners ?? 0) === desired.failedEphemeralRunners &&
      current.phase === desired.phase &&
      isDeepStrictEqual(current.conditions ?? [], desired.conditions ?? []);
    if (unchanged) return;
    try {
      await this.deps.client.mergePatchStatus(
        EphemeralRunnerSetKind,
        set.metadata?.namespace ?? '',
        set.metadata?.name ?? '',
        {
          status: desired,
        },
      );
      log.debug('Updated the status', { ...desired, conditions: undefined });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}
