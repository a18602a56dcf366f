import type { Counter, Gauge, Registry } from 'prom-client';
import { getOrCreateCounter, getOrCreateGauge, metricsRegistry } from '@aro/observability';

/** The canary roll-outs' metrics, per AutoscalingRunnerSet. */
export class CanaryMetrics {
  private readonly verdicts: Counter<'namespace' | 'name' | 'verdict'>;
  private readonly active: Gauge<'namespace' | 'name'>;

  constructor(registry: Registry = metricsRegistry()) {
    this.verdicts = getOrCreateCounter(registry, {
      name: 'aro_canary_verdicts_total',
      help: 'Runner template changes judged on canary runners, by verdict (promoted, rolled_back)',
      labelNames: ['namespace', 'name', 'verdict'],
    });
    this.active = getOrCreateGauge(registry, {
      name: 'aro_canary_in_progress',
      help: '1 while a runner template change runs on canary runners of the set, 0 otherwise',
      labelNames: ['namespace', 'name'],
    });
  }

  verdict(namespace: string, name: string, verdict: 'promoted' | 'rolled_back'): void {
    this.verdicts.inc({ namespace, name, verdict });
    this.active.set({ namespace, name }, 0);
  }

  /** The set is gone (`namespace/name`): its gauge goes; its counters stay, as counters do. */
  forget(key: string): void {
    const [namespace = '', name = ''] = key.split('/');
    this.active.remove({ namespace, name });
  }

  inProgress(namespace: string, name: string): void {
    this.active.set({ namespace, name }, 1);
  }
}
