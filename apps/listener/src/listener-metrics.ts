import type { Counter, Gauge, Registry } from 'prom-client';
import { getOrCreateCounter, getOrCreateGauge } from '@aro/observability/lean';
import type { FailureKind } from './failures';

/** The EphemeralRunnerSet a shared listener's series belong to (upstream's gauge labels `name`, `namespace`). */
export interface ScaleSetSeries {
  name: string;
  namespace: string;
}

type SetLabel = 'name' | 'namespace';

/**
 * ARO's own listener metrics, next to upstream's gha_* ones: what the loop did and what went wrong,
 * so an operator (and a test) can see that the listener is working, not only what GitHub reports.
 *
 * A listener pod serves one scale set, so its series carry no scale-set labels (as they always have).
 * In shared mode (one process, many scale sets) each listener passes its EphemeralRunnerSet and every
 * series carries `name` and `namespace`, the labels upstream's gauges use; the families are shared by
 * all the listeners of the process's registry.
 */
export class ListenerMetrics {
  private readonly sessionOpen: Gauge<SetLabel>;
  private readonly sessionCreates: Counter<'result' | SetLabel>;
  private readonly messages: Counter<SetLabel>;
  private readonly pollCycles: Counter<'result' | SetLabel>;
  private readonly failures: Counter<'kind' | SetLabel>;
  private readonly jobsAcquiredTotal: Counter<SetLabel>;
  private readonly jobsNotAcquiredTotal: Counter<'reason' | SetLabel>;
  private readonly scalePatches: Counter<'result' | SetLabel>;
  private readonly runnerStatusPatches: Counter<'result' | SetLabel>;
  private readonly runnerStatusQueueDepth: Gauge<SetLabel>;
  private readonly headroomRunners: Gauge<SetLabel>;
  private readonly runnerStartSeconds: Gauge<SetLabel>;
  private readonly idleRunnerSecondsTotal: Counter<SetLabel>;
  private readonly set: Partial<Record<SetLabel, string>>;

  constructor(registry: Registry, scaleSet?: ScaleSetSeries) {
    this.set = scaleSet ? { name: scaleSet.name, namespace: scaleSet.namespace } : {};
    const setLabels: SetLabel[] = scaleSet ? ['name', 'namespace'] : [];
    const gauge = (name: string, help: string) =>
      getOrCreateGauge<SetLabel>(registry, { name, help, labelNames: setLabels });
    const counter = <L extends string>(name: string, help: string, labels: L[] = []) =>
      getOrCreateCounter<L | SetLabel>(registry, { name, help, labelNames: [...labels, ...setLabels] });
    this.sessionOpen = gauge(
      'aro_listener_session_open',
      '1 while the listener holds an open message session with the Actions service',
    );
    this.sessionCreates = counter(
      'aro_listener_session_creates_total',
      'Message session create attempts, by result (created, conflict, failed)',
      ['result'],
    );
    this.messages = counter(
      'aro_listener_messages_total',
      'Messages received from the queue and acknowledged',
    );
    this.pollCycles = counter(
      'aro_listener_poll_cycles_total',
      'Iterations of the poll loop, by result (message, empty, failed)',
      ['result'],
    );
    this.failures = counter(
      'aro_listener_failures_total',
      'Failed Actions calls of the poll loop, by kind (conflict, session-gone, queue-token-expired, unauthorized, rate-limited, transient)',
      ['kind'],
    );
    this.jobsAcquiredTotal = counter('aro_listener_jobs_acquired_total', 'Jobs acquired for the scale set');
    this.jobsNotAcquiredTotal = counter(
      'aro_listener_jobs_not_acquired_total',
      'Offered jobs not acquired, by reason (capacity: maxRunners reached; taken: the service gave them elsewhere; failed: the acquire call failed)',
      ['reason'],
    );
    this.scalePatches = counter(
      'aro_listener_scale_patches_total',
      'EphemeralRunnerSet replicas/patchID patches, by result',
      ['result'],
    );
    this.runnerStatusPatches = counter(
      'aro_listener_runner_status_patches_total',
      'EphemeralRunner status patches recording a started job, by result (patched, not_found, failed)',
      ['result'],
    );
    this.runnerStatusQueueDepth = gauge(
      'aro_listener_runner_status_queue_depth',
      'EphemeralRunner status patches waiting for the bookkeeping worker',
    );
    this.headroomRunners = gauge(
      'aro_listener_headroom_runners',
      'Warm headroom: idle runners the listener keeps above minRunners for the recent job arrival rate (0 when off)',
    );
    this.runnerStartSeconds = gauge(
      'aro_listener_runner_start_seconds',
      'Warm headroom: the runner start time it sizes the headroom with (median of recent cold starts, in seconds; 0 before one)',
    );
    this.idleRunnerSecondsTotal = counter(
      'aro_listener_idle_runner_seconds_total',
      'Runner time spent idle (registered, no job), from the Actions service statistics (in seconds): the cost of minRunners and warm headroom',
    );
  }

  sessionState(open: boolean): void {
    this.sessionOpen.set({ ...this.set }, open ? 1 : 0);
  }

  sessionCreate(result: 'created' | 'conflict' | 'failed'): void {
    this.sessionCreates.inc({ result, ...this.set });
  }

  message(): void {
    this.messages.inc({ ...this.set });
  }

  pollCycle(result: 'message' | 'empty' | 'failed'): void {
    this.pollCycles.inc({ result, ...this.set });
  }

  failure(kind: FailureKind): void {
    this.failures.inc({ kind, ...this.set });
  }

  jobsAcquired(n: number): void {
    this.jobsAcquiredTotal.inc({ ...this.set }, n);
  }

  jobsNotAcquired(reason: string, n: number): void {
    this.jobsNotAcquiredTotal.inc({ reason, ...this.set }, n);
  }

  scalePatch(result: 'success' | 'error'): void {
    this.scalePatches.inc({ result, ...this.set });
  }

  runnerStatusPatch(result: 'patched' | 'not_found' | 'failed'): void {
    this.runnerStatusPatches.inc({ result, ...this.set });
  }

  runnerStatusQueue(depth: number): void {
    this.runnerStatusQueueDepth.set({ ...this.set }, depth);
  }

  /** The warm headroom of the latest decision and the start time it was sized with. */
  headroom(runners: number, startTimeMs: number | undefined): void {
    this.headroomRunners.set({ ...this.set }, runners);
    this.runnerStartSeconds.set({ ...this.set }, (startTimeMs ?? 0) / 1000);
  }

  idleRunnerSeconds(seconds: number): void {
    this.idleRunnerSecondsTotal.inc({ ...this.set }, seconds);
  }

  /** Drops this scale set's series (a shared listener stopped serving it); a no-op without labels. */
  async forget(): Promise<void> {
    const { name, namespace } = this.set;
    if (!name) return;
    const families: Array<Gauge<string> | Counter<string>> = [
      this.sessionOpen,
      this.sessionCreates,
      this.messages,
      this.pollCycles,
      this.failures,
      this.jobsAcquiredTotal,
      this.jobsNotAcquiredTotal,
      this.scalePatches,
      this.runnerStatusPatches,
      this.runnerStatusQueueDepth,
      this.headroomRunners,
      this.runnerStartSeconds,
      this.idleRunnerSecondsTotal,
    ];
    for (const family of families) {
      for (const { labels } of (await family.get()).values) {
        if (labels.name === name && labels.namespace === namespace) family.remove(labels);
      }
    }
  }
}
