import { getOrCreateCounter, getOrCreateGauge, getOrCreateHistogram } from '@aro/observability';
import type { Registry } from 'prom-client';

const reconcileTimeBuckets = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25,
  1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];

export const reconcileResults = ['success', 'error', 'requeue', 'requeue_after'] as const;
export type ReconcileOutcome = (typeof reconcileResults)[number];

export type ControllerMetrics = ReturnType<typeof controllerMetrics>;

/**
 * controller-runtime's per-controller metrics, with its names, help and labels, so dashboards and
 * alerts written for upstream's controller read ARO's unchanged.
 */
export function controllerMetrics(registry: Registry, controller: string) {
  const total = getOrCreateCounter(registry, {
    name: 'controller_runtime_reconcile_total',
    help: 'Total number of reconciliations per controller',
    labelNames: ['controller', 'result'] as const,
  });
  /** A per-controller counter: controller-runtime's name and help, one `controller` label. */
  const perController = (name: string, help: string) =>
    getOrCreateCounter(registry, { name, help, labelNames: ['controller'] as const });
  const errors = perController(
    'controller_runtime_reconcile_errors_total',
    'Total number of reconciliation errors per controller',
  );
  const terminalErrors = perController(
    'controller_runtime_terminal_reconcile_errors_total',
    'Total number of terminal reconciliation errors per controller',
  );
  const panics = perController(
    'controller_runtime_reconcile_panics_total',
    'Total number of reconciliation panics per controller',
  );
  const timeouts = perController(
    'controller_runtime_reconcile_timeouts_total',
    'Total number of reconciliation timeouts per controller',
  );
  const time = getOrCreateHistogram(registry, {
    name: 'controller_runtime_reconcile_time_seconds',
    help: 'Length of time per reconciliation per controller',
    labelNames: ['controller'] as const,
    buckets: reconcileTimeBuckets,
  });
  const gauge = (name: string, help: string) =>
    getOrCreateGauge(registry, { name, help, labelNames: ['controller'] as const });
  const activeWorkers = gauge(
    'controller_runtime_active_workers',
    'Number of currently used workers per controller',
  );
  const maxConcurrent = gauge(
    'controller_runtime_max_concurrent_reconciles',
    'Maximum number of concurrent reconciles per controller',
  );
  // Series exist from the start, as controller-runtime's initMetrics makes them, so a rate() or an
  // `increase(...) > 0` alert over them does not begin with a gap.
  for (const result of reconcileResults) total.inc({ controller, result }, 0);
  for (const counter of [errors, terminalErrors, panics, timeouts]) counter.inc({ controller }, 0);
  activeWorkers.set({ controller }, 0);
  return { total, errors, terminalErrors, panics, timeouts, time, activeWorkers, maxConcurrent };
}

/**
 * What Go calls a panic, in a reconciler written in TypeScript: a programming error (reading a property
 * of undefined, a bad index or argument) rather than a failure the code meant to report. Counted as
 * controller_runtime_reconcile_panics_total, and retried like any error, as controller-runtime does
 * with RecoverPanic on (its default).
 */
export function isPanic(err: unknown): boolean {
  return (
    err instanceof TypeError ||
    err instanceof ReferenceError ||
    err instanceof RangeError ||
    err instanceof SyntaxError ||
    !(err instanceof Error)
  );
}
