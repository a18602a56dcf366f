import {
  Counter,
  CounterConfiguration,
  Gauge,
  GaugeConfiguration,
  Histogram,
  HistogramConfiguration,
  Registry,
  register,
} from 'prom-client';

/**
 * The registry /metrics serves. It is prom-client's global one, which is also what
 * @willsoto/nestjs-prometheus exposes, so metrics made anywhere in the process show up without
 * wiring. Classes that own metrics take a registry option defaulting to this, so tests can give each
 * instance a registry of its own.
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
