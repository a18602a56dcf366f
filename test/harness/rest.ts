import { request, type RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

export interface KubeResponse {
  status: number;
  /** Parsed JSON when the body is JSON, the raw text otherwise. */
  body: unknown;
  headers: Record<string, string | string[] | undefined>;
}

export interface KubeRequest {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Absolute API path, e.g. `/apis/actions.github.com/v1alpha1`. */
  path: string;
  body?: unknown;
  contentType?: string;
  timeoutMs?: number;
  /** More request headers (e.g. `Impersonate-User`). */
  headers?: Record<string, string>;
}

/**
 * One raw request to the API server with the kubeconfig's credentials. The harness needs a few calls the
 * generated clients do not offer (health endpoints, discovery of an arbitrary group) and must work before
 * any of them could be trusted, so it speaks HTTPS itself.
 */
export async function kubeRequest(kc: KubeConfig, req: KubeRequest): Promise<KubeResponse> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) {
    throw new Error('The kubeconfig has no current cluster');
  }
  const url = new URL(req.path, cluster.server);
  const options: RequestOptions = {
    method: req.method ?? 'GET',
    hostname: url.hostname,
    port: url.port,
    path: url.pathname + url.search,
    headers: { Accept: 'application/json', ...req.headers },
  };
  await kc.applyToHTTPSOptions(options);
  const payload = req.body === undefined ? undefined : JSON.stringify(req.body);
  if (payload !== undefined) {
    options.headers = {
      ...options.headers,
      'Content-Type': req.contentType ?? 'application/json',
      'Content-Length': Buffer.byteLength(payload),
    };
  }
  const timeoutMs = req.timeoutMs ?? 10_000;
  return new Promise<KubeResponse>((resolve, reject) => {
    const outgoing = request(options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown = text;
        if ((res.headers['content-type'] ?? '').includes('json')) {
          try {
            body = JSON.parse(text);
          } catch {
            body = text;
          }
        }
        resolve({ status: res.statusCode ?? 0, body, headers: res.headers });
      });
    });
    outgoing.setTimeout(timeoutMs, () => {
      outgoing.destroy(new Error(`${options.method} ${url.href} timed out after ${timeoutMs} ms`));
    });
    outgoing.on('error', reject);
    if (payload !== undefined) {
      outgoing.write(payload);
    }
    outgoing.end();
  });
}
