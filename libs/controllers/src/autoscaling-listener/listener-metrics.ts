import type { Counter, Gauge, Registry } from 'prom-client';
import { getOrCreateCounter, getOrCreateGauge, metricsRegistry } from '@aro/observability';
import type { ConfigBuildReason } from './listener-config-refresh';
import { SCALE_SET_METRIC_LABELS, ScaleSetMetricLabels } from '../shared/scale-set-labels';

type Label = (typeof SCALE_SET_METRIC_LABELS)[number];

/**
 * Upstream's `gha_controller_running_listeners`: 1 while a scale set's listener container runs, else 0.
 * And ARO's `aro_listener_config_builds_total{reason}`: each build reads the credential Secret live,
 * so this counts those reads and says why they happened.
 */
export class ListenerMetrics {
  private readonly running: Gauge<Label>;
  private readonly configBuilds: Counter<'reason'>;
  private readonly labelsByListener = new Map<string, ScaleSetMetricLabels>();

  constructor(registry: Registry = metricsRegistry()) {
    this.running = getOrCreateGauge<Label>(registry, {
      name: 'gha_controller_running_listeners',
      help: 'Number of listeners in a running state.',
      labelNames: [...SCALE_SET_METRIC_LABELS],
    });
    this.configBuilds = getOrCreateCounter<'reason'>(registry, {
      name: 'aro_listener_config_builds_total',
      help: 'Listener configs built from the credential Secret, by reason (new, changed, missing, refresh).',
      labelNames: ['reason'],
    });
  }

  configBuilt(reason: ConfigBuildReason): void {
    this.configBuilds.inc({ reason });
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
