import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { createLogger } from '@aro/observability';
import { KubeClient } from '../client/kube-client';
import { PodKind } from '../client/kinds';
import type { KubeObject } from '../client/types';
import { CONTROLLING_OWNER_INDEX, controllingOwnerIndex, controllingOwnerKey } from './indexes';
import { Informer, type InformerEvent, type InformerOptions } from './informer';

/*
 * A stand-in for the API server's list and watch of pods in one namespace, answering the way the real one
 * does (list with resourceVersion, newline-delimited watch events, 410 as an ERROR event or an HTTP
 * status), with each watch request's behaviour scripted by the test. The real server cannot be told to
 * expire a watch or go silent on demand; this one can.
 */
type WatchBehaviour = 'stream' | 'gone-event' | 'gone-http' | 'error-500' | 'silent';

interface Pod extends KubeObject {
  metadata: {
    name: string;
    namespace: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    managedFields?: object[];
  };
  spec?: { n?: number };
}

class FakeApiServer {
  private server = http.createServer((req, res) => this.handle(req, res));
  private objects = new Map<string, Pod>();
  private rv = 100;
  private streams = new Set<http.ServerResponse>();
  private silent = new Set<http.ServerResponse>();
  readonly watchScript: WatchBehaviour[] = [];
  readonly watchRequests: URLSearchParams[] = [];
  lists = 0;
  failLists = false;
  holdLists = false;

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const s of [...this.streams, ...this.silent]) s.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Changes server state and tells open (streaming) watches, as etcd would. */
  upsert(name: string, spec: Pod['spec'] = {}, labels?: Record<string, string>): void {
    const existed = this.objects.has(name);
    const pod: Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name,
        namespace: 'ns',
        resourceVersion: String(++this.rv),
        labels,
        // As the real server answers every object since server-side apply.
        managedFields: [{ manager: 'kubectl', operation: 'Update', fieldsV1: { 'f:spec': {} } }],
      },
      spec,
    };
    this.objects.set(name, pod);
    this.broadcast({ type: existed ? 'MODIFIED' : 'ADDED', object: pod });
  }

  remove(name: string): void {
    const pod = this.objects.get(name);
    if (!pod) return;
    this.objects.delete(name);
    this.broadcast({
      type: 'DELETED',
      object: { ...pod, metadata: { ...pod.metadata, resourceVersion: String(++this.rv) } },
    });
  }

  /** Changes server state without telling watches, as if the events were lost while disconnected. */
  upsertQuietly(name: string, spec: Pod['spec'] = {}): void {
    const streams = [...this.streams];
    this.streams.clear();
    this.upsert(name, spec);
    streams.forEach((s) => this.streams.add(s));
  }

  removeQuietly(name: string): void {
    this.objects.delete(name);
    this.rv++;
  }

  bookmark(): void {
    this.broadcast({
      type: 'BOOKMARK',
      object: { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: String(++this.rv) } },
    });
  }

  /** Ends every open watch cleanly, as the server does at timeoutSeconds. */
  endWatches(): void {
    for (const s of [...this.streams, ...this.silent]) s.end();
    this.streams.clear();
    this.silent.clear();
  }

  get openWatches(): number {
    return this.streams.size + this.silent.size;
  }

  private broadcast(event: unknown): void {
    for (const s of this.streams) s.write(JSON.stringify(event) + '\n');
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname !== '/api/v1/namespaces/ns/pods') {
      res.writeHead(404).end();
      return;
    }
    if (url.searchParams.get('watch') !== 'true') {
      this.lists++;
      if (this.holdLists) {
        this.silent.add(res);
        return;
      }
      if (this.failLists) {
        res.writeHead(503, { 'Content-Type': 'application/json' });
        res.end(
          JSON.stringify({
            kind: 'Status',
            apiVersion: 'v1',
            status: 'Failure',
            code: 503,
            reason: 'ServiceUnavailable',
            message: 'etcd is down',
          }),
        );
        return;
      }
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(
        JSON.stringify({
          kind: 'PodList',
          apiVersion: 'v1',
          metadata: { resourceVersion: String(this.rv) },
          items: [...this.objects.values()].map((o) => ({ ...o, apiVersion: undefined, kind: undefined })),
        }),
      );
      return;
    }
    this.watchRequests.push(url.searchParams);
    const behaviour = this.watchScript.shift() ?? 'stream';
    const gone = {
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      code: 410,
      reason: 'Expired',
      message: 'too old resource version',
    };
    switch (behaviour) {
      case 'gone-http':
        res.writeHead(410, { 'Content-Type': 'application/json' }).end(JSON.stringify(gone));
        return;
      case 'error-500':
        res.writeHead(500, { 'Content-Type': 'application/json' });
        res.end(
          JSON.stringify({
            kind: 'Status',
            apiVersion: 'v1',
            status: 'Failure',
            code: 500,
            reason: 'InternalError',
            message: 'boom',
          }),
        );
        return;
      case 'gone-event':
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ type: 'ERROR', object: gone }) + '\n');
        return;
      case 'silent':
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.flushHeaders();
        this.silent.add(res);
        return;
      case 'stream':
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.flushHeaders();
        this.streams.add(res);
        res.on('close', () => this.streams.delete(res));
        return;
    }
  }
}

async function eventually(check: () => void, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      check();
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

describe('Informer (against a scripted API server)', () => {
  let server: FakeApiServer;
  let client: KubeClient;
  let informer: Informer<Pod>;
  let events: InformerEvent<Pod>[];
  let registry: Registry;
  let kubeConfig: KubeConfig;

  async function startInformer(opts: InformerOptions = {}): Promise<void> {
    informer = new Informer<Pod>(client, PodKind, {
      namespace: 'ns',
      backoff: { initialMs: 10, maxMs: 50 },
      registry,
      logger: process.env.DEBUG_INFORMER ? createLogger({ level: 'debug', format: 'text' }) : undefined,
      ...opts,
    });
    informer.addEventHandler((e) => events.push(e));
    await informer.start();
    await informer.waitForSync();
  }

  beforeEach(async () => {
    server = new FakeApiServer();
    const kc = new KubeConfig();
    kubeConfig = kc;
    kc.loadFromClusterAndUser(
      { name: 'fake', server: await server.start(), skipTLSVerify: true },
      { name: 'u' },
    );
    client = new KubeClient(kc, { requestTimeoutMs: 2_000 });
    events = [];
    registry = new Registry();
  });

  afterEach(async () => {
    await informer?.stop();
    client.close();
    await server.close();
  });

  it('keeps no managedFields in its store, from the list or from a watch event', async () => {
    server.upsert('listed');
    await startInformer();
    await eventually(() => expect(server.openWatches).toBe(1));
    server.upsert('watched');
    await eventually(() => expect(informer.get('ns', 'watched')).toBeDefined());
    expect(informer.get('ns', 'listed')?.metadata).not.toHaveProperty('managedFields');
    expect(informer.get('ns', 'watched')?.metadata).not.toHaveProperty('managedFields');
    expect(informer.get('ns', 'watched')?.metadata.resourceVersion).toBeDefined();
  });

  function summary(): string[] {
    return events.map((e) => `${e.type} ${e.object.metadata.name}`);
  }

  it('lists, then applies watch events for creates, updates and deletes', async () => {
    server.upsert('a');
    await startInformer();
    expect(informer.hasSynced()).toBe(true);
    expect(summary()).toEqual(['added a']);
    await eventually(() => expect(server.openWatches).toBe(1));

    server.upsert('b');
    server.upsert('a', { n: 2 });
    server.remove('b');
    await eventually(() => expect(summary()).toEqual(['added a', 'added b', 'modified a', 'deleted b']));
    expect(informer.get('ns', 'a')?.spec).toEqual({ n: 2 });
    expect(events[2].oldObject?.spec).toEqual({});
    expect(informer.get('ns', 'b')).toBeUndefined();
    expect(informer.list('ns').map((p) => p.metadata.name)).toEqual(['a']);
  });

  it('watches from the list resourceVersion with bookmarks, and continues from the last bookmark', async () => {
    server.upsert('a');
    await startInformer({ watchTimeoutSeconds: 7 });
    await eventually(() => expect(server.openWatches).toBe(1));
    const first = server.watchRequests[0];
    expect(first.get('resourceVersion')).toBe('101');
    expect(first.get('allowWatchBookmarks')).toBe('true');
    expect(first.get('timeoutSeconds')).toBe('7');

    // The bookmark and the end of the stream travel in order on one connection.
    server.bookmark();
    server.endWatches();
    await eventually(() => expect(server.watchRequests.length).toBe(2));
    expect(server.watchRequests[1].get('resourceVersion')).toBe('102');
    expect(server.lists).toBe(1);
  });

  it('after a clean close resumes from the last event received, not from the list or an earlier bookmark', async () => {
    server.upsert('a');
    await startInformer();
    await eventually(() => expect(server.openWatches).toBe(1));
    expect(server.watchRequests[0].get('resourceVersion')).toBe('101');

    server.bookmark(); // 102
    server.upsert('b'); // 103
    server.upsert('a', { n: 2 }); // 104
    server.remove('b'); // 105
    await eventually(() => expect(summary()).toEqual(['added a', 'added b', 'modified a', 'deleted b']));
    server.endWatches();
    await eventually(() => expect(server.watchRequests.length).toBe(2));
    expect(server.watchRequests[1].get('resourceVersion')).toBe('105');

    // The resumed watch goes on from there, without a relist or a replayed event.
    server.upsert('c'); // 106
    await eventually(() => expect(summary()).toContain('added c'));
    expect(summary()).toEqual(['added a', 'added b', 'modified a', 'deleted b', 'added c']);
    server.endWatches();
    await eventually(() => expect(server.watchRequests.length).toBe(3));
    expect(server.watchRequests[2].get('resourceVersion')).toBe('106');
    expect(server.lists).toBe(1);
  });

  it('hands out copies, so changing what was read leaves the cache intact', async () => {
    server.upsert('a', { n: 1 });
    await startInformer();
    informer.get('ns', 'a')!.spec!.n = 99;
    informer.list()[0].metadata.name = 'changed';
    events[0].object.spec!.n = 42;
    expect(informer.get('ns', 'a')?.spec).toEqual({ n: 1 });
    expect(informer.list()[0].metadata.name).toBe('a');
  });

  it.each(['get', 'list', 'byIndex'] as const)(
    'hands out copies from %s: mutating what it returned changes nothing any later read sees',
    async (path) => {
      server.upsert('a', { n: 1 }, { role: 'worker' });
      await startInformer();
      informer.addIndex('byRole', (p) => [p.metadata.labels?.role ?? '']);
      const pristine = structuredClone(informer.get('ns', 'a'));
      const reads = {
        get: () => [informer.get('ns', 'a')!],
        list: () => informer.list('ns'),
        byIndex: () => informer.byIndex('byRole', 'worker'),
      };

      for (const object of reads[path]()) {
        object.spec!.n = 99;
        object.metadata.labels!.role = 'hijacked';
        object.metadata.resourceVersion = '1';
        object.metadata.name = 'renamed';
      }

      for (const read of Object.values(reads)) expect(read()).toEqual([pristine]);
      expect(informer.byIndex('byRole', 'hijacked')).toEqual([]);
    },
  );

  it.each(['gone-event', 'gone-http'] as const)(
    'relists after a 410 (%s) and reports what changed meanwhile',
    async (gone) => {
      server.upsert('a');
      server.upsert('b');
      server.watchScript.push('silent');
      await startInformer({ silenceTimeoutMs: 60_000 });
      await eventually(() => expect(server.openWatches).toBe(1));
      events.length = 0;

      // While the informer is not told: a changes, b goes, c arrives; then its watch expires.
      server.upsertQuietly('a', { n: 2 });
      server.removeQuietly('b');
      server.upsertQuietly('c');
      server.watchScript.push(gone);
      // The silent watch ends cleanly; the informer watches again from where it was and is told 410.
      server.endWatches();
      await eventually(() => expect(summary().sort()).toEqual(['added c', 'deleted b', 'modified a']));
      expect(
        informer
          .list()
          .map((p) => p.metadata.name)
          .sort(),
      ).toEqual(['a', 'c']);
      const relists = await registry.getSingleMetricAsString('aro_informer_lists_total');
      expect(relists).toContain('aro_informer_lists_total{resource="pods",scope="ns"} 2');
    },
  );

  it('keeps going after an HTTP 500 on the watch, unlike client-node', async () => {
    server.watchScript.push('error-500', 'error-500');
    await startInformer();
    await eventually(() => expect(server.openWatches).toBe(1));
    server.upsert('late');
    await eventually(() => expect(summary()).toEqual(['added late']));
    const restarts = await registry.getSingleMetricAsString('aro_informer_watch_restarts_total');
    expect(restarts).toContain('reason="error"} 2');
  });

  it('relists a 410 that arrives as an in-stream ERROR event on a running watch', async () => {
    server.upsert('a');
    server.watchScript.push('gone-event');
    await startInformer();
    await eventually(() => expect(server.lists).toBe(2));
    await eventually(() => expect(server.openWatches).toBe(1));
    server.upsert('b');
    await eventually(() => expect(summary()).toEqual(['added a', 'added b']));
  });

  it('aborts a silent watch and relists', async () => {
    server.upsert('a');
    server.watchScript.push('silent');
    await startInformer({ silenceTimeoutMs: 300 });
    server.upsertQuietly('a', { n: 5 });
    await eventually(() => expect(server.lists).toBe(2));
    await eventually(() => expect(informer.get('ns', 'a')?.spec).toEqual({ n: 5 }));
    const restarts = await registry.getSingleMetricAsString('aro_informer_watch_restarts_total');
    expect(restarts).toContain('reason="silent"} 1');
  });

  it('does not count a watch with regular bookmarks as silent', async () => {
    await startInformer({ silenceTimeoutMs: 400 });
    await eventually(() => expect(server.openWatches).toBe(1));
    for (let i = 0; i < 8; i++) {
      server.bookmark();
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(server.lists).toBe(1);
    expect(server.watchRequests.length).toBe(1);
  });

  it('turns unhealthy while lists keep failing, and healthy again once they succeed', async () => {
    server.upsert('a');
    await startInformer({ unhealthyAfterMs: 300 });
    await eventually(() => expect(server.openWatches).toBe(1));
    server.failLists = true;
    server.watchScript.push('gone-http', 'gone-http', 'gone-http');
    server.endWatches();
    // The scripted 410s come first, so the last error may name one of them for a moment before the
    // failing list takes over: wait for the list's error rather than read the first unhealthy answer.
    await eventually(() => {
      expect(informer.health().healthy).toBe(false);
      expect(informer.health().reason).toMatch(/pods has made no list or watch progress.*etcd is down/);
    });
    server.failLists = false;
    await eventually(() => expect(informer.health()).toEqual({ healthy: true }));
    expect(informer.hasSynced()).toBe(true);
  });

  it('tells a handler registered late about the objects already cached', async () => {
    server.upsert('a');
    server.upsert('b');
    await startInformer();
    const late: string[] = [];
    informer.addEventHandler((e) => late.push(`${e.type} ${e.object.metadata.name}`));
    expect(late.sort()).toEqual(['added a', 'added b']);
  });

  it('isolates a throwing handler from the others and from the cache', async () => {
    informer = new Informer<Pod>(client, PodKind, { namespace: 'ns', registry });
    informer.addEventHandler(() => {
      throw new Error('handler bug');
    });
    informer.addEventHandler((e) => events.push(e));
    await informer.start();
    await informer.waitForSync();
    await eventually(() => expect(server.openWatches).toBe(1));
    server.upsert('a');
    await eventually(() => expect(summary()).toEqual(['added a']));
    expect(informer.get('ns', 'a')).toBeDefined();
  });

  it('keeps secondary indexes current through updates and deletes', async () => {
    const owned = (name: string, owner: string) => ({
      name,
      namespace: 'ns',
      ownerReferences: [{ apiVersion: 'v1', kind: 'Thing', name: owner, uid: owner, controller: true }],
    });
    await startInformer();
    informer.addIndex(CONTROLLING_OWNER_INDEX, controllingOwnerIndex);
    informer.addIndex('byLabel', (p) => Object.values(p.metadata.labels ?? {}));
    await eventually(() => expect(server.openWatches).toBe(1));
    server.upsert('x', {}, { role: 'a' });
    await eventually(() =>
      expect(informer.byIndex('byLabel', 'a').map((p) => p.metadata.name)).toEqual(['x']),
    );
    server.upsert('x', {}, { role: 'b' });
    await eventually(() => expect(informer.byIndex('byLabel', 'b').length).toBe(1));
    expect(informer.byIndex('byLabel', 'a')).toEqual([]);
    server.remove('x');
    await eventually(() => expect(informer.byIndex('byLabel', 'b')).toEqual([]));

    expect(controllingOwnerIndex({ metadata: owned('p', 'r1') })).toEqual([
      controllingOwnerKey('ns', 'Thing', 'r1'),
    ]);
    expect(controllingOwnerIndex({ metadata: { ...owned('p', 'r1'), ownerReferences: [] } })).toEqual([]);
    expect(() => informer.byIndex('nope', 'v')).toThrow(/no index nope/);
  });

  it('rejects sync waiters when stopped before it could list', async () => {
    server.failLists = true;
    informer = new Informer<Pod>(client, PodKind, {
      namespace: 'ns',
      registry,
      backoff: { initialMs: 10, maxMs: 20 },
    });
    await informer.start();
    const waiting = informer.waitForSync();
    await eventually(() => expect(server.lists).toBeGreaterThan(1));
    await informer.stop();
    await expect(waiting).rejects.toThrow(/stopped before it synced/);
    expect(informer.hasSynced()).toBe(false);
  });

  it('stops without waiting for a list the server never answers', async () => {
    server.holdLists = true;
    const patient = new KubeClient(kubeConfig, { requestTimeoutMs: 600_000 });
    informer = new Informer<Pod>(patient, PodKind, { namespace: 'ns', registry });
    await informer.start();
    await eventually(() => expect(server.lists).toBe(1));
    // Were the list not abandoned, stop() would wait out the 10-minute request timeout and fail the test.
    await informer.stop();
    expect(informer.hasSynced()).toBe(false);
    patient.close();
  });

  it('lets a waiter give up through its abort signal', async () => {
    server.failLists = true;
    informer = new Informer<Pod>(client, PodKind, {
      namespace: 'ns',
      registry,
      backoff: { initialMs: 10, maxMs: 20 },
    });
    await informer.start();
    const ac = new AbortController();
    const waiting = informer.waitForSync(ac.signal);
    ac.abort(new Error('gave up'));
    await expect(waiting).rejects.toThrow('gave up');
  });
});
