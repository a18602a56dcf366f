import type { Gauge, Registry } from 'prom-client';
import { getOrCreateGauge, metricsRegistry } from '@aro/observability';
import { SCALE_SET_METRIC_LABELS, ScaleSetMetricLabels } from '../ephemeral-runner-set/scale-set-common';

type Label = (typeof SCALE_SET_METRIC_LABELS)[number];

/** Upstream's `gha_controller_running_listeners`: 1 while a scale set's listener container runs, else 0. */
export class ListenerMetrics {
  private readonly running: Gauge<Label>;
  private readonly labelsByListener = new Map<string, ScaleSetMetricLabels>();

  constructor(registry: Registry = metricsRegistry()) {
    this.running = getOrCreateGauge<Label>(registry, {
      name: 'gha_controller_running_listeners',
      help: 'Number of listeners in a running state.',
      labelNames: [...SCALE_SET_METRIC_LABELS],
    });
  }

  labels(key: string, labels: ScaleSetMetricLabels): void {
    const previous = this.labelsByListener.get(key);
    if (previous && JSON.stringify(previous) !== JSON.stringify(labels)) this.running.remove({ ...previous });
    this.labelsByListener.set(key, labels);
  }

  set(key: string, running: boolean): void {
    const labels = this.labelsByListener.get(key);
    if (labels) this.running.set({ ...labels }, running ? 1 : 0);
  }

  forget(key: string): void {
    const labels = this.labelsByListener.get(key);
    if (labels) this.running.remove({ ...labels });
    this.labelsByListener.delete(key);
  }
}
