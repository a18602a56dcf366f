/*
 * @aro/observability/lean: the logger, the metric helpers and the log levels without
 * ObservabilityModule (which loads @nestjs/common and rxjs). For code that runs outside Nest, such as
 * the per-pod listener and the clients of @aro/kube/lean and @aro/actions/lean; everything else
 * imports @aro/observability.
 */
export * from './logger';
export * from './metrics';
export * from './log-level';
export { Registry, Counter, Gauge, Histogram, collectProcessMetrics } from './prom-client-parts';
