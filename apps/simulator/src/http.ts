import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '@aro/observability';
import { defaultTypeKey, restErrorBody, SimulatorHttpError, vssErrorBody } from './errors';
import type { CallCounters, FaultDecision, FaultInjector } from './faults';
import { matchRoute, type Route, type RouteKind } from './routes';

/**
 * The wire: reads a request, finds its route, counts it, applies injected faults, runs the handler
 * and writes the answer with the headers real clients key on (ActivityId, X-GitHub-Request-Id, an
 * exact Content-Length). Kept on bare node:http so faults can drop sockets and shape bytes exactly.
 */

const MAX_BODY_BYTES = 4 * 1024 * 1024;
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

export interface WireDeps {
  routes: Route[];
  faults: FaultInjector;
  counters: CallCounters;
  log: Logger;
  stopping: AbortSignal;
  admin(
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    query: URLSearchParams,
    body: string,
  ): Promise<void>;
}

interface Shape {
  kind: RouteKind;
  bom: boolean;
  textPlainErrors: boolean;
  emptyErrorBodies: boolean;
}

const plainShape = (kind: RouteKind): Shape => ({
  kind,
  bom: false,
  textPlainErrors: false,
  emptyErrorBodies: false,
});

/** Duplicate and trailing slashes are accepted, as the real service does for joined URLs. */
export function normalisePath(pathname: string): string {
  const collapsed = pathname.replace(/\/{2,}/g, '/');
  return collapsed.length > 1 ? collapsed.replace(/\/$/, '') : collapsed;
}

export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new SimulatorHttpError(413, `request body larger than ${MAX_BODY_BYTES} bytes`));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      let buf = Buffer.concat(chunks);
      if (buf.subarray(0, 3).equals(BOM)) buf = buf.subarray(3);
      resolve(buf.toString('utf8'));
    });
    req.on('error', reject);
  });
}

function baseHeaders(kind: RouteKind): Record<string, string> {
  const h: Record<string, string> = { ActivityId: randomUUID() };
  if (kind === 'rest') h['X-GitHub-Request-Id'] = `SIM:${randomUUID().slice(0, 8).toUpperCase()}`;
  return h;
}

function write(
  res: ServerResponse,
  status: number,
  headers: Record<string, string>,
  body: Buffer | null,
): void {
  if (res.destroyed || res.headersSent) return;
  res.writeHead(status, { ...headers, 'Content-Length': String(body ? body.length : 0) });
  res.end(body ?? undefined);
}

export function sendSuccess(res: ServerResponse, status: number, body: unknown, shape: Shape): void {
  const headers = baseHeaders(shape.kind);
  if (body === undefined) {
    write(res, status, headers, null);
    return;
  }
  headers['Content-Type'] =
    shape.kind === 'rest'
      ? 'application/json; charset=utf-8'
      : 'application/json; charset=utf-8; api-version=6.0-preview';
  const json = Buffer.from(JSON.stringify(body), 'utf8');
  write(res, status, headers, shape.bom ? Buffer.concat([BOM, json]) : json);
}

export function sendError(res: ServerResponse, err: SimulatorHttpError, shape: Shape): void {
  const headers = { ...baseHeaders(shape.kind), ...err.headers };
  if (shape.emptyErrorBodies) {
    write(res, err.status, headers, null);
    return;
  }
  if (shape.textPlainErrors) {
    headers['Content-Type'] = 'text/plain; charset=utf-8';
    write(res, err.status, headers, Buffer.from(err.message, 'utf8'));
    return;
  }
  const body =
    shape.kind === 'rest'
      ? restErrorBody(err.message)
      : vssErrorBody(err.typeKey ?? defaultTypeKey(err.status), err.message);
  headers['Content-Type'] = 'application/json; charset=utf-8';
  const json = Buffer.from(JSON.stringify(body), 'utf8');
  write(res, err.status, headers, shape.bom ? Buffer.concat([BOM, json]) : json);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

function injectedError(decision: FaultDecision, key: string): SimulatorHttpError {
  const status = decision.status as number;
  const headers: Record<string, string> = {};
  if (decision.retryAfterSeconds !== null) headers['Retry-After'] = String(decision.retryAfterSeconds);
  return new SimulatorHttpError(status, `Injected fault: ${status} on ${key}.`, undefined, headers);
}

export function createRequestHandler(deps: WireDeps): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    void handle(deps, req, res).catch((err: unknown) => {
      deps.log.error('Simulator request failed', err, { method: req.method, url: req.url });
      if (!res.headersSent && !res.destroyed) {
        sendError(
          res,
          new SimulatorHttpError(500, err instanceof Error ? err.message : String(err)),
          plainShape('actions'),
        );
      }
    });
  };
}

async function handle(deps: WireDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://simulator.invalid');
  const path = normalisePath(url.pathname);
  const method = (req.method ?? 'GET').toUpperCase();
  const kind: RouteKind = path.startsWith('/api/v3/') ? 'rest' : 'actions';
  let body: string;
  try {
    body = await readBody(req);
  } catch (err) {
    if (err instanceof SimulatorHttpError) sendError(res, err, plainShape(kind));
    return;
  }

  if (path === '/_sim' || path.startsWith('/_sim/')) {
    await deps.admin(req, res, path, url.searchParams, body);
    return;
  }

  const match = matchRoute(deps.routes, method, path);
  if (!match) {
    deps.counters.record(`${method} <unmatched>`);
    sendError(res, new SimulatorHttpError(404, `No route for ${method} ${path}.`), plainShape(kind));
    return;
  }
  if ('allowed' in match) {
    deps.counters.record(`${method} <unmatched>`);
    sendError(
      res,
      new SimulatorHttpError(405, `Method ${method} is not allowed on ${path}.`, undefined, {
        Allow: match.allowed.join(', '),
      }),
      plainShape(kind),
    );
    return;
  }

  const { route, params } = match;
  deps.counters.record(route.key);
  const decision = deps.faults.decide(route.key);
  const shape: Shape = {
    kind: route.kind,
    bom: decision.bom,
    textPlainErrors: decision.textPlainErrors,
    emptyErrorBodies: decision.emptyErrorBodies,
  };
  const clientGone = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) clientGone.abort();
  });
  const signal = AbortSignal.any([clientGone.signal, deps.stopping]);

  if (decision.latencyMs > 0) await sleep(decision.latencyMs, signal);
  if (decision.drop) {
    deps.log.debug('Dropping connection (injected fault)', { route: route.key });
    req.socket.destroy();
    return;
  }
  if (decision.status !== null) {
    sendError(res, injectedError(decision, route.key), shape);
    return;
  }

  let parsed: unknown;
  if (body.trim().length > 0) {
    try {
      parsed = JSON.parse(body);
    } catch {
      sendError(
        res,
        new SimulatorHttpError(400, `The request body is not valid JSON.`, 'ArgumentException'),
        shape,
      );
      return;
    }
  }

  try {
    const out = await route.handle({
      params,
      query: url.searchParams,
      headers: req.headers,
      body: parsed,
      signal,
    });
    if (signal.aborted && deps.stopping.aborted) {
      req.socket.destroy();
      return;
    }
    sendSuccess(res, out.status, out.body, shape);
    deps.log.debug('Handled call', { route: route.key, status: out.status });
  } catch (err) {
    if (!(err instanceof SimulatorHttpError)) throw err;
    deps.log.debug('Refused call', {
      route: route.key,
      status: err.status,
      typeKey: err.typeKey,
      message: err.message,
    });
    sendError(res, err, shape);
  }
}
