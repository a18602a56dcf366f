import { apiVersionOf, type ResourceKind } from '@aro/api/lean';
import type { V1Status } from '@kubernetes/client-node';
import type { KubeConfigSource } from './kubeconfig';
import { metricsRegistry, silentLogger, type Logger } from '@aro/observability/lean';
import type { Registry } from 'prom-client';
import { KubeApiError, type RequestContext } from './errors';
import { queryString, resourcePath } from './paths';
import { HttpTransport, type HttpResponse, type RequestSpec } from './transport';
import type { DeleteOptions, KubeObject, ListOptions, Reader, WatchEvent, WatchOptions } from './types';

export interface KubeClientOptions {
  /** Bound on every request except watches, which `timeoutSeconds` and the informer's watchdog bound. */
  requestTimeoutMs?: number;
  userAgent?: string;
  /** Recorded in managedFields for every create, replace and patch. */
  fieldManager?: string;
  logger?: Logger;
  /** Where rest_client_requests_total is counted; the process's /metrics registry by default. */
  registry?: Registry;
  /**
   * How many times a request refused with 429 and a Retry-After is sent again, each after the wait the
   * server asked for. Default 10, as client-go.
   */
  maxThrottledRetries?: number;
}

/**
 * The longest Retry-After the client waits out itself (API priority and fairness asks for 1 to 32 s).
 * A longer one goes back to the caller in the error, to requeue by.
 */
const MAX_RETRY_AFTER_SECONDS = 60;

const MERGE_PATCH = 'application/merge-patch+json';
/*
 * Lists are read in pages so that neither side holds one huge response; every page comes from the same
 * snapshot (the continue token pins it), so the first page's resourceVersion holds for the whole list.
 */
const LIST_PAGE_SIZE = 500;

interface ListBody<T> {
  metadata?: { resourceVersion?: string; continue?: string };
  items?: T[];
}

/**
 * The uncached client: every call is one REST request (or a few, for a paged list) against the API
 * server, addressed by path from a ResourceKind, so one client serves built-in and custom kinds alike
 * without discovery. Objects come back as plain JSON typed as the caller asks (client-node's V1Pod etc.
 * describe the same JSON); nothing runs them through a serializer.
 */
export class KubeClient implements Reader {
  private readonly transport: HttpTransport;
  private readonly fieldManager: string;
  private readonly log: Logger;
  private readonly maxThrottledRetries: number;
  /** Per request target, when the apiserver said it would take it again (epoch ms). */
  private readonly notBefore = new Map<string, number>();

  constructor(kubeConfig: KubeConfigSource, opts: KubeClientOptions = {}) {
    this.transport = new HttpTransport(kubeConfig, {
      requestTimeoutMs: opts.requestTimeoutMs ?? 30_000,
      userAgent: opts.userAgent ?? 'aro',
      registry: opts.registry ?? metricsRegistry(),
    });
    this.fieldManager = opts.fieldManager ?? 'aro';
    this.maxThrottledRetries = opts.maxThrottledRetries ?? 10;
    this.log = (opts.logger ?? silentLogger).child({ component: 'kube-client' });
  }

  /** Releases keep-alive sockets. The client is unusable afterwards. */
  close(): void {
    this.transport.close();
  }

  /**
   * Resets every connection to the API server (see HttpTransport.resetConnections): a replica that
   * lost its lease calls it so that no write it sent can still reach the server later.
   */
  resetConnections(): number {
    return this.transport.resetConnections();
  }

  async get<T extends KubeObject>(kind: ResourceKind, namespace: string, name: string): Promise<T> {
    const ctx = { verb: 'get', kind, namespace, name };
    return this.call<T>({ method: 'GET', path: resourcePath(kind, namespace, name), ctx });
  }

  async list<T extends KubeObject>(kind: ResourceKind, opts: ListOptions = {}): Promise<T[]> {
    return (await this.listWithVersion<T>(kind, opts)).items;
  }

  /**
   * The objects and the list's resourceVersion, the point a watch continues from. `signal` abandons the
   * list part way (an informer being stopped) with a KubeTransportError.
   */
  async listWithVersion<T extends KubeObject>(
    kind: ResourceKind,
    opts: ListOptions = {},
    signal?: AbortSignal,
  ): Promise<{ items: T[]; resourceVersion: string }> {
    const ctx = { verb: 'list', kind, namespace: opts.namespace };
    const items: T[] = [];
    let resourceVersion: string | undefined;
    let continueToken: string | undefined;
    do {
      const query = queryString({
        labelSelector: opts.labelSelector,
        fieldSelector: opts.fieldSelector,
        limit: LIST_PAGE_SIZE,
        continue: continueToken,
      });
      const page = await this.call<ListBody<T>>({
        method: 'GET',
        path: resourcePath(kind, opts.namespace) + query,
        ctx,
        signal,
      });
      resourceVersion ??= page.metadata?.resourceVersion;
      continueToken = page.metadata?.continue || undefined;
      // Items of a list carry no apiVersion/kind on the wire for built-in kinds; fill them in so an
      // object looks the same whether it came from get, list or watch.
      for (const item of page.items ?? []) items.push(withTypeMeta(kind, item));
    } while (continueToken);
    if (resourceVersion === undefined) {
      throw new Error(`list ${kind.kind}: the server's answer carries no resourceVersion`);
    }
    return { items, resourceVersion };
  }

  async create<T extends KubeObject>(kind: ResourceKind, obj: T): Promise<T> {
    const namespace = obj.metadata?.namespace;
    const ctx = { verb: 'create', kind, namespace, name: obj.metadata?.name ?? obj.metadata?.generateName };
    if (kind.namespaced && !namespace)
      throw new TypeError(`create ${kind.kind}: metadata.namespace is empty`);
    return this.write<T>({
      method: 'POST',
      path: resourcePath(kind, namespace) + queryString({ fieldManager: this.fieldManager }),
      body: withTypeMeta(kind, obj),
      ctx,
    });
  }

  /** An RFC 7386 merge patch (`application/merge-patch+json`) of the object. */
  async mergePatch<T extends KubeObject>(
    kind: ResourceKind,
    namespace: string,
    name: string,
    patch: object,
  ): Promise<T> {
    return this.patch<T>(kind, namespace, name, patch, undefined);
  }

  /** A merge patch of the `status` subresource; other fields in the patch are ignored by the server. */
  async mergePatchStatus<T extends KubeObject>(
    kind: ResourceKind,
    namespace: string,
    name: string,
    patch: object,
  ): Promise<T> {
    return this.patch<T>(kind, namespace, name, patch, 'status');
  }

  /** PUT of the whole object; a stale `metadata.resourceVersion` fails with 409 Conflict. */
  async replace<T extends KubeObject>(kind: ResourceKind, obj: T): Promise<T> {
    const namespace = obj.metadata?.namespace;
    const name = obj.metadata?.name ?? '';
    const ctx = { verb: 'replace', kind, namespace, name };
    return this.write<T>({
      method: 'PUT',
      path: resourcePath(kind, namespace, name) + queryString({ fieldManager: this.fieldManager }),
      body: withTypeMeta(kind, obj),
      ctx,
    });
  }

  async delete(kind: ResourceKind, namespace: string, name: string, opts: DeleteOptions = {}): Promise<void> {
    const ctx = { verb: 'delete', kind, namespace, name };
    await this.write<unknown>({
      method: 'DELETE',
      path: resourcePath(kind, namespace, name),
      body: { apiVersion: 'v1', kind: 'DeleteOptions', ...opts },
      ctx,
    });
  }

  /**
   * Streams changes from `opts.resourceVersion` on. Resolves when the server ends the stream (at
   * `timeoutSeconds`, or when it restarts) or when `signal` aborts; rejects with a KubeApiError when the
   * server refuses the watch or sends an ERROR event (`isGone(e)` for a resourceVersion it no longer
   * holds), and with a KubeTransportError when the connection fails.
   */
  async watch<T extends KubeObject>(
    kind: ResourceKind,
    opts: WatchOptions,
    onEvent: (e: WatchEvent<T>) => void,
    signal: AbortSignal,
  ): Promise<void> {
    const ctx = { verb: 'watch', kind, namespace: opts.namespace };
    const query = queryString({
      watch: true,
      resourceVersion: opts.resourceVersion,
      allowWatchBookmarks: opts.allowWatchBookmarks,
      timeoutSeconds: opts.timeoutSeconds,
      labelSelector: opts.labelSelector,
      fieldSelector: opts.fieldSelector,
    });
    const spec: RequestSpec = { method: 'GET', path: resourcePath(kind, opts.namespace) + query, ctx };
    const refused = await this.transport.stream(spec, signal, (line) => {
      const event = JSON.parse(line) as { type: string; object: unknown };
      if (event.type === 'ERROR') {
        const status = event.object as V1Status;
        throw new KubeApiError(status.code ?? 500, ctx, status);
      }
      onEvent(event as WatchEvent<T>);
    });
    if (refused) throw toApiError(refused, ctx);
  }

  private async patch<T extends KubeObject>(
    kind: ResourceKind,
    namespace: string,
    name: string,
    patch: object,
    subresource: 'status' | undefined,
  ): Promise<T> {
    const ctx = { verb: subresource ? 'patch status of' : 'patch', kind, namespace, name };
    return this.write<T>({
      method: 'PATCH',
      path:
        resourcePath(kind, namespace, name, subresource) + queryString({ fieldManager: this.fieldManager }),
      body: patch,
      contentType: MERGE_PATCH,
      ctx,
    });
  }

  /** Holds requests to `target` back for `ms`; forgets targets whose wait is over once there are many. */
  private holdBack(target: string, ms: number): void {
    const now = Date.now();
    if (this.notBefore.size > 1_000) {
      for (const [t, at] of this.notBefore) if (at <= now) this.notBefore.delete(t);
    }
    this.notBefore.set(target, now + ms);
  }

  private async write<T>(spec: RequestSpec): Promise<T> {
    try {
      const result = await this.call<T>(spec);
      this.log.debug('Wrote to the API server', logFields(spec.ctx));
      return result;
    } catch (err) {
      this.log.debug('A write to the API server failed', { ...logFields(spec.ctx), error: String(err) });
      throw err;
    }
  }

  /**
   * One request. A 429 that says when to come back (API priority and fairness shedding load, the
   * max-in-flight limit) is sent again after that wait, as client-go does: such a request was refused
   * before it was served, so sending it again (a write too) does not do it twice, and a client that
   * retried sooner would be refused again and make the server's Retry-After grow for every client of
   * its priority level.
   */
  private async call<T>(spec: RequestSpec): Promise<T> {
    // The wait is kept per target (method and path), not only by this call: another caller's request
    // for the same object (two controllers reading one ServiceAccount) waits it out too.
    const target = `${spec.method} ${spec.path.split('?')[0]}`;
    let res: HttpResponse;
    for (let retry = 0; ; retry++) {
      const wait = (this.notBefore.get(target) ?? 0) - Date.now();
      if (wait > 0) await waitOrAbort(wait, spec.signal);
      res = await this.transport.request(spec);
      const seconds = res.statusCode === 429 ? retryAfterSeconds(res) : undefined;
      if (seconds === undefined) break;
      // No sooner than a second: a Retry-After of 0 must not turn into a burst.
      this.holdBack(target, Math.min(Math.max(1, seconds), MAX_RETRY_AFTER_SECONDS) * 1000);
      if (retry >= this.maxThrottledRetries || seconds > MAX_RETRY_AFTER_SECONDS || spec.signal?.aborted)
        break;
      this.log.debug('The API server asked to retry later; waiting', {
        ...logFields(spec.ctx),
        retryAfterSeconds: seconds,
        retry: retry + 1,
      });
    }
    if (res.statusCode < 200 || res.statusCode >= 300) throw toApiError(res, spec.ctx);
    try {
      return JSON.parse(res.body) as T;
    } catch (err) {
      throw new Error(`${spec.ctx.verb} ${spec.ctx.kind.kind}: the server's answer is not JSON`, {
        cause: err,
      });
    }
  }
}

function logFields(ctx: RequestContext): Record<string, unknown> {
  return { verb: ctx.verb, kind: ctx.kind.kind, namespace: ctx.namespace, name: ctx.name };
}

function toApiError(res: HttpResponse, ctx: RequestContext): KubeApiError {
  let status: V1Status | undefined;
  try {
    const parsed = JSON.parse(res.body) as { kind?: string };
    if (parsed.kind === 'Status') status = parsed as V1Status;
  } catch {
    // Not JSON (a proxy's error page, API priority and fairness's plain-text 429): the body text goes
    // into the message instead.
  }
  const retryAfter = retryAfterSeconds(res) ?? status?.details?.retryAfterSeconds;
  return new KubeApiError(res.statusCode, ctx, status, status ? undefined : res.body, retryAfter);
}

/** Retry-After in whole seconds (the apiserver never sends an HTTP date), or undefined. */
function retryAfterSeconds(res: HttpResponse): number | undefined {
  if (res.retryAfter === undefined || !/^\d+$/.test(res.retryAfter.trim())) return undefined;
  return Number(res.retryAfter.trim());
}

/** Waits `ms`; false when `signal` aborted first (the caller gave up on the request). */
function waitOrAbort(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function withTypeMeta<T extends KubeObject>(kind: ResourceKind, obj: T): T {
  if (obj.apiVersion && obj.kind) return obj;
  return { ...obj, apiVersion: obj.apiVersion ?? apiVersionOf(kind), kind: obj.kind ?? kind.kind };
}
