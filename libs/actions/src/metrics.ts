import { getOrCreateCounter, getOrCreateHistogram, metricsRegistry } from '@aro/observability/lean';
import { Counter, Histogram, Registry } from 'prom-client';

/**
 * Request metrics of the Actions client. `route` is a template (`DELETE agents/{id}`), never a raw
 * URL, so that ids and names cannot blow up the series count. Every HTTP attempt is counted, a
 * retried call once per attempt; `code` is the HTTP status, or `error` when no response came back.
 */
export class ActionsMetrics {
  readonly requests: Counter<'route' | 'method' | 'code'>;
  readonly duration: Histogram<'route' | 'method'>;
  readonly retries: Counter<'route' | 'method'>;
  readonly adminTokenRefreshes: Counter<'result'>;

  constructor(registry: Registry = metricsRegistry()) {
    this.requests = getOrCreateCounter(registry, {
      name: 'actions_requests_total',
      help: 'HTTP requests (attempts) sent to GitHub and the Actions service, by route template, method and status code',
      labelNames: ['route', 'method', 'code'],
    });
    this.duration = getOrCreateHistogram(registry, {
      name: 'actions_request_duration_seconds',
      help: 'Duration of one HTTP attempt to GitHub or the Actions service, until the body is read',
      labelNames: ['route', 'method'],
      // The message long poll sits near 50 s, so the buckets reach past it.
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    });
    this.retries = getOrCreateCounter(registry, {
      name: 'actions_request_retries_total',
      help: 'Requests to GitHub or the Actions service repeated after a retryable failure',
      labelNames: ['route', 'method'],
    });
    this.adminTokenRefreshes = getOrCreateCounter(registry, {
      name: 'actions_admin_token_refreshes_total',
      help: 'Exchanges of GitHub credentials for an Actions service admin token, by result',
      labelNames: ['result'],
    });
  }
}
