import type * as PromClient from 'prom-client';

/*
 * The parts of prom-client a listener pod uses, each required from its own module. prom-client's index
 * also loads its default metrics, whose CPU counter loads @opentelemetry/api for exemplars, the
 * cluster aggregator and the push gateway: about 90 modules and ~9 MiB of a listener pod's RSS at
 * start for code it never runs (docs/performance.md, "The listener"). prom-client's version is pinned
 * (package.json) and its package has no `exports` map, so these paths are part of what a version bump
 * checks (the listener's specs and integration tests run through them). They are the very modules the
 * index loads, so a process that loads both (the controller, tests) still has one Registry class and
 * one global registry.
 */
/* eslint-disable @typescript-eslint/no-require-imports -- prom-client ships no types for its inner modules */
const RegistryModule = require('prom-client/lib/registry') as typeof PromClient.Registry & {
  globalRegistry: PromClient.Registry;
};
export const Registry: typeof PromClient.Registry = RegistryModule;
export const register: PromClient.Registry = RegistryModule.globalRegistry;
export const Counter = require('prom-client/lib/counter') as typeof PromClient.Counter;
export const Gauge = require('prom-client/lib/gauge') as typeof PromClient.Gauge;
export const Histogram = require('prom-client/lib/histogram') as typeof PromClient.Histogram;

/** One of prom-client's default metrics: registers its series on the registry it is given. */
type DefaultMetric = (registry: PromClient.Registry, config: object) => void;
const residentMemory = require('prom-client/lib/metrics/osMemoryHeap') as DefaultMetric;
const startTime = require('prom-client/lib/metrics/processStartTime') as DefaultMetric;
const heapSizeAndUsed = require('prom-client/lib/metrics/heapSizeAndUsed') as DefaultMetric;
/* eslint-enable @typescript-eslint/no-require-imports */

export type Registry = PromClient.Registry;
export type Counter<T extends string = string> = PromClient.Counter<T>;
export type Gauge<T extends string = string> = PromClient.Gauge<T>;
export type Histogram<T extends string = string> = PromClient.Histogram<T>;

/**
 * The process metrics an operator reads for one listener pod: `process_cpu_seconds_total`,
 * `process_resident_memory_bytes`, `process_start_time_seconds` and the V8 heap (the full default set
 * stays with the controller and the shared listener). The CPU counter is written here rather than taken
 * from prom-client, whose own loads @opentelemetry/api (~2.5 MiB) for exemplars a pod never serves.
 */
export function collectProcessMetrics(registry: PromClient.Registry): void {
  residentMemory(registry, {});
  startTime(registry, {});
  heapSizeAndUsed(registry, {});
  let reported = process.cpuUsage();
  const cpu = new Counter({
    name: 'process_cpu_seconds_total',
    help: 'Total user and system CPU time spent in seconds.',
    registers: [registry],
    collect() {
      const now = process.cpuUsage();
      // cpuUsage is in microseconds and never goes back, so each scrape adds what was spent since the last.
      cpu.inc((now.user - reported.user + now.system - reported.system) / 1e6);
      reported = now;
    },
  });
}
