import type { CounterConfiguration, GaugeConfiguration, HistogramConfiguration } from 'prom-client';
import { Counter, Gauge, Histogram, Registry, register } from './prom-client-parts';

/**
 * prom-client's global registry, for code outside an app (a bench, a one-off script). An app's
 * metrics live in the registry its ObservabilityModule provides, which is what its /metrics serves;
 * classes that own metrics take a registry option, so tests give each instance a registry of its own.
 */
export function metricsRegistry(): Registry {
  return register;
}

/*
 * prom-client throws when a name is registered twice in one registry. Two controllers or two
 * managers in one process (leader-election tests, the sandbox) legitimately share a metric family, so
 * the second one gets the existing metric instead of an exception.
 */
function existing<T>(registry: Registry, name: string): T | undefined {
  return registry.getSingleMetric(name) as T | undefined;
}

export function getOrCreateCounter<L extends string>(
  registry: Registry,
  config: Omit<CounterConfiguration<L>, 'registers'>,
): Counter<L> {
  return existing<Counter<L>>(registry, config.name) ?? new Counter<L>({ ...config, registers: [registry] });
}

export function getOrCreateGauge<L extends string>(
  registry: Registry,
  config: Omit<GaugeConfiguration<L>, 'registers'>,
): Gauge<L> {
  return existing<Gauge<L>>(registry, config.name) ?? new Gauge<L>({ ...config, registers: [registry] });
}

export function getOrCreateHistogram<L extends string>(
  registry: Registry,
  config: Omit<HistogramConfiguration<L>, 'registers'>,
): Histogram<L> {
  return (
    existing<Histogram<L>>(registry, config.name) ?? new Histogram<L>({ ...config, registers: [registry] })
  );
}
