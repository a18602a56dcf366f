import { Counter, Gauge, Registry } from 'prom-client';
import type { FailureKind } from './failures';

/**
 * ARO's own listener metrics, next to upstream's gha_* ones: what the loop did and what went wrong,
 * so an operator (and a test) can see that the listener is working, not only what GitHub reports.
 * One listener process serves one scale set, so no scale-set labels are needed.
 */
export class ListenerMetrics {
  readonly sessionOpen: Gauge;
  readonly sessionCreates: Counter<'result'>;
  readonly messages: Counter;
  readonly pollCycles: Counter<'result'>;
  readonly failures: Counter<'kind'>;
  readonly jobsAcquired: Counter;
  readonly jobsNotAcquired: Counter<'reason'>;
  readonly scalePatches: Counter<'result'>;
  readonly runnerStatusPatches: Counter<'result'>;
  readonly runnerStatusQueueDepth: Gauge;

  constructor(registry: Registry) {
    const registers = [registry];
    this.sessionOpen = new Gauge({
      name: 'aro_listener_session_open',
      help: '1 while the listener holds an open message session with the Actions service',
      registers,
    });
    this.sessionCreates = new Counter({
      name: 'aro_listener_session_creates_total',
      help: 'Message session create attempts, by result (created, conflict, failed)',
      labelNames: ['result'],
      registers,
    });
    this.messages = new Counter({
      name: 'aro_listener_messages_total',
      help: 'Messages received from the queue and acknowledged',
      registers,
    });
    this.pollCycles = new Counter({
      name: 'aro_listener_poll_cycles_total',
      help: 'Iterations of the poll loop, by result (message, empty, failed)',
      labelNames: ['result'],
      registers,
    });
    this.failures = new Counter({
      name: 'aro_listener_failures_total',
      help: 'Failed Actions calls of the poll loop, by kind (conflict, session-gone, queue-token-expired, unauthorized, rate-limited, transient)',
      labelNames: ['kind'],
      registers,
    });
    this.jobsAcquired = new Counter({
      name: 'aro_listener_jobs_acquired_total',
      help: 'Jobs acquired for the scale set',
      registers,
    });
    this.jobsNotAcquired = new Counter({
      name: 'aro_listener_jobs_not_acquired_total',
      help: 'Offered jobs not acquired, by reason (capacity: maxRunners reached; taken: the service gave them elsewhere; failed: the acquire call failed)',
      labelNames: ['reason'],
      registers,
    });
    this.scalePatches = new Counter({
      name: 'aro_listener_scale_patches_total',
      help: 'EphemeralRunnerSet replicas/patchID patches, by result',
      labelNames: ['result'],
      registers,
    });
    this.runnerStatusPatches = new Counter({
      name: 'aro_listener_runner_status_patches_total',
      help: 'EphemeralRunner status patches recording a started job, by result (patched, not_found, failed)',
      labelNames: ['result'],
      registers,
    });
    this.runnerStatusQueueDepth = new Gauge({
      name: 'aro_listener_runner_status_queue_depth',
      help: 'EphemeralRunner status patches waiting for the bookkeeping worker',
      registers,
    });
  }

  failure(kind: FailureKind): void {
    this.failures.inc({ kind });
  }
}
