import { getOrCreateCounter } from '@aro/observability/lean';
import type { Registry } from 'prom-client';

/**
 * client-go's `rest_client_requests_total{code, method, host}`, as controller-runtime registers it:
 * one count per HTTP request to the API server, once its response head (or its failure) is known.
 * `code` is the status code, or `<error>` when no answer came (client-go keeps error text out of the
 * label so its cardinality stays bounded); `host` is the server's host:port.
 */
export type RequestResultRecorder = (code: number | undefined, method: string) => void;

export function restClientRequests(registry: Registry, server: URL): RequestResultRecorder {
  const counter = getOrCreateCounter(registry, {
    name: 'rest_client_requests_total',
    help: 'Number of HTTP requests, partitioned by status code, method, and host.',
    labelNames: ['code', 'method', 'host'] as const,
  });
  const host = server.host;
  return (code, method) => counter.inc({ code: code === undefined ? '<error>' : String(code), method, host });
}
