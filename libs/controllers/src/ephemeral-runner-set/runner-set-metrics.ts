import type { Gauge, Registry } from 'prom-client';
import { getOrCreateGauge, metricsRegistry } from '@aro/observability';
import { SCALE_SET_METRIC_LABELS, ScaleSetMetricLabels } from '../shared/scale-set-labels';

type Label = (typeof SCALE_SET_METRIC_LABELS)[number];

/**
 * Upstream's per-set runner gauges (`gha_controller_{pending,running,failed}_ephemeral_runners`,
 * labels name, namespace, repository, organization, enterprise), set from the runners the set's
 * reconcile counted, so they are right after every pass whatever was missed before.
 */
export class EphemeralRunnerSetMetrics {
  private readonly pending: Gauge<Label>;
  private readonly running: Gauge<Label>;
  private readonly failed: Gauge<Label>;
  private readonly published = new Map<string, ScaleSetMetricLabels>();

  constructor(registry: Registry = metricsRegistry()) {
    const gauge = (name: string, help: string) =>
      getOrCreateGauge<Label>(registry, { name, help, labelNames: [...SCALE_SET_METRIC_LABELS] });
    this.pending = gauge(
      'gha_controller_pending_ephemeral_runners',
      'Number of ephemeral runners in a pending state.',
    );
    this.running = gauge(
      'gha_controller_running_ephemeral_runners',
      'Number of ephemeral runners in a running state.',
    );
    this.failed = gauge(
      'gha_controller_failed_ephemeral_runners',
      'Number of ephemeral runners in a failed state.',
    );
  }

  set(
    key: string,
    labels: ScaleSetMetricLabels,
    counts: { pending: number; running: number; failed: number },
  ): void {
    const previous = this.published.get(key);
    if (previous && JSON.stringify(previous) !== JSON.stringify(labels)) this.forget(key);
    this.pending.set({ ...labels }, counts.pending);
    this.running.set({ ...labels }, counts.running);
    this.failed.set({ ...labels }, counts.failed);
    this.published.set(key, labels);
  }

  /** The set is gone: its series go too, so a dashboard does not show a deleted set's last counts. */
  forget(key: string): void {
    const labels = this.published.get(key);
    if (!labels) return;
    for (const gauge of [this.pending, this.running, this.failed]) gauge.remove({ ...labels });
    this.published.delete(key);
  }
}
