import { Writable } from 'node:stream';
import { createLogger } from '@aro/observability';
import { Registry } from 'prom-client';
import type { InformerEvent } from '../cache';
import { type KubeObject, KubeApiError, PodKind } from '../client';
import { FakeClock, flushMicrotasks } from '../testing';
import { Controller, type ControllerOptions, type EventSource } from './controller';
import { enqueueControllingOwner, enqueueObject } from './handlers';
import { resourceVersionChangedPredicate } from './predicates';
import { TerminalError } from './terminal-error';
import {
  type ReconcileContext,
  type Reconciler,
  type Request,
  type Result,
  done,
  requeueAfter,
} from './types';

class FakeSource<T extends KubeObject> implements EventSource<T> {
  private readonly handlers: Array<(e: InformerEvent<T>) => void> = [];
  readonly objects = new Map<string, T>();

  addEventHandler(handler: (e: InformerEvent<T>) => void): void {
    this.handlers.push(handler);
    for (const object of this.objects.values()) handler({ type: 'added', object });
  }

  list(): T[] {
    return [...this.objects.values()];
  }

  emit(event: InformerEvent<T>): void {
    const key = `${event.object.metadata?.namespace}/${event.object.metadata?.name}`;
    if (event.type === 'deleted') this.objects.delete(key);
    else this.objects.set(key, event.object);
    for (const h of this.handlers) h(event);
  }
}

function obj(name: string, resourceVersion = '1', extra: Partial<KubeObject['metadata']> = {}): KubeObject {
  return { metadata: { namespace: 'ns', name, resourceVersion, ...extra } };
}

/** A reconciler whose calls a test resolves by hand, recording what it was asked and with what context. */
class ScriptedReconciler implements Reconciler {
  readonly calls: Array<{ req: Request; ctx: ReconcileContext; finish: (r: Result | Error) => void }> = [];
  running = 0;
  maxRunningPerKey = new Map<string, number>();
  private runningPerKey = new Map<string, number>();

  reconcile(req: Request, ctx: ReconcileContext): Promise<Result> {
    const key = `${req.namespace}/${req.name}`;
    const now = (this.runningPerKey.get(key) ?? 0) + 1;
    this.runningPerKey.set(key, now);
    this.maxRunningPerKey.set(key, Math.max(now, this.maxRunningPerKey.get(key) ?? 0));
    this.running++;
    return new Promise<Result>((resolve, reject) => {
      this.calls.push({
        req,
        ctx,
        finish: (r) => {
          this.running--;
          this.runningPerKey.set(key, (this.runningPerKey.get(key) ?? 1) - 1);
          if (r instanceof Error) reject(r);
          else resolve(r);
        },
      });
    });
  }

  names(): string[] {
    return this.calls.map((c) => c.req.name);
  }
}

interface Harness {
  controller: Controller;
  source: FakeSource<KubeObject>;
  clock: FakeClock;
  registry: Registry;
  logs: Array<Record<string, unknown>>;
  stop: AbortController;
  cancel: AbortController;
  running: Promise<void>;
}

function harness(reconciler: Reconciler, options: ControllerOptions = {}, start = true): Harness {
  const clock = new FakeClock();
  const registry = new Registry();
  const logs: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk, _enc, cb) {
      for (const line of String(chunk).split('\n').filter(Boolean)) logs.push(JSON.parse(line));
      cb();
    },
  });
  const controller = new Controller(
    'widgets',
    reconciler,
    { logger: createLogger({ level: 'debug', destination }), registry, clock },
    options,
  );
  const source = new FakeSource<KubeObject>();
  controller.watch(source, enqueueObject(), [resourceVersionChangedPredicate]);
  const stop = new AbortController();
  const cancel = new AbortController();
  const running = start ? controller.start(stop.signal, cancel.signal) : Promise.resolve();
  return { controller, source, clock, registry, logs, stop, cancel, running };
}

async function counter(registry: Registry, name: string, labels: Record<string, string>): Promise<number> {
  const data = await registry.getSingleMetric(name)!.get();
  return (
    data.values.find((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val))?.value ??
    Number.NaN
  );
}

describe('Controller', () => {
  it('reconciles the object an event names, with a logger bound to it', async () => {
    const r = new ScriptedReconciler();
    const h = harness(r);
    h.source.emit({ type: 'added', object: obj('a') });
    await flushMicrotasks();
    expect(r.calls.map((c) => c.req)).toEqual([{ namespace: 'ns', name: 'a' }]);

    r.calls[0].ctx.log.info('inside');
    const line = h.logs.find((l) => l.message === 'inside')!;
    expect(line).toMatchObject({ controller: 'widgets', namespace: 'ns', name: 'a' });
    expect(line.reconcileID).toEqual(expect.any(String));

    r.calls[0].finish(done);
    await flushMicrotasks();
    expect(await counter(h.registry, 'controller_runtime_reconcile_total', { result: 'success' })).toBe(1);
    h.stop.abort();
    await h.running;
  });

  it('gives each reconcile its own reconcileID', async () => {
    const r = new ScriptedReconciler();
    const h = harness(r);
    h.source.emit({ type: 'added', object: obj('a') });
    await flushMicrotasks();
    r.calls[0].ctx.log.info('first');
    r.calls[0].finish(done);
    h.source.emit({ type: 'modified', object: obj('a', '2'), oldObject: obj('a', '1') });
    await flushMicrotasks();
    r.calls[1].ctx.log.info('second');
    const ids = h.logs
      .filter((l) => l.message === 'first' || l.message === 'second')
      .map((l) => l.reconcileID);
    expect(new Set(ids).size).toBe(2);
    r.calls[1].finish(done);
    h.stop.abort();
    await h.running;
  });

  it('drops an update whose resourceVersion did not change', async () => {
    const r = new ScriptedReconciler();
    const h = harness(r);
    h.source.emit({ type: 'added', object: obj('a', '5') });
    await flushMicrotasks();
    r.calls[0].finish(done);
    await flushMicrotasks();
    h.source.emit({ type: 'modified', object: obj('a', '5'), oldObject: obj('a', '5') });
    await flushMicrotasks();
    expect(r.calls).toHaveLength(1);
    h.source.emit({ type: 'modified', object: obj('a', '6'), oldObject: obj('a', '5') });
    await flushMicrotasks();
    expect(r.calls).toHaveLength(2);
    r.calls[1].finish(done);
    h.stop.abort();
    await h.running;
  });

  it('reconciles a deleted object too, so its cleanup runs', async () => {
    const r = new ScriptedReconciler();
    const h = harness(r);
    h.source.emit({ type: 'deleted', object: obj('gone') });
    await flushMicrotasks();
    expect(r.names()).toEqual(['gone']);
    r.calls[0].finish(done);
    h.stop.abort();
    await h.running;
  });

  it('never runs one key twice at once, and reconciles again after an event that arrived mid-reconcile', async () => {
    const r = new ScriptedReconciler();
    const h = harness(r, { maxConcurrentReconciles: 4 });
    h.source.emit({ type: 'added', object: obj('a', '1') });
    await flushMicrotasks();
    h.source.emit({ type: 'modified', object: obj('a', '2'), oldObject: obj('a', '1') });
    h.source.emit({ type: 'modified', object: obj('a', '3'), oldObject: obj('a', '2') });
    h.source.emit({ type: 'added', object: obj('b', '1') });
    await flushMicrotasks();
    expect(r.names()).toEqual(['a', 'b']);
    r.calls[0].finish(done);
    await flushMicrotasks();
    expect(r.names()).toEqual(['a', 'b', 'a']);
    r.calls[1].finish(done);
    r.calls[2].finish(done);
    await flushMicrotasks();
    expect(r.calls).toHaveLength(3);
    expect(r.maxRunningPerKey.get('ns/a')).toBe(1);
    h.stop.abort();
    await h.running;
  });

  it('runs different keys in parallel up to maxConcurrentReconciles', async () => {
    const r = new ScriptedReconciler();
    const h = harness(r, { maxConcurrentReconciles: 3 });
    for (const n of ['a', 'b', 'c', 'd', 'e']) h.source.emit({ type: 'added', object: obj(n) });
    await flushMicrotasks();
    expect(r.running).toBe(3);
    expect(await counter(h.registry, 'controller_runtime_active_workers', { controller: 'widgets' })).toBe(3);
    expect(
      await counter(h.registry, 'controller_runtime_max_concurrent_reconciles', { controller: 'widgets' }),
    ).toBe(3);
    for (let i = 0; i < 5; i++) {
      r.calls[i].finish(done);
      await flushMicrotasks();
    }
    expect(r.names().sort()).toEqual(['a', 'b', 'c', 'd', 'e']);
    h.stop.abort();
    await h.running;
  });

  it('retries a failing reconcile with growing backoff, logs the key, and keeps the worker alive', async () => {
    const r = new ScriptedReconciler();
    const h = harness(r);
    h.source.emit({ type: 'added', object: obj('flaky') });
    await flushMicrotasks();
    r.calls[0].finish(new Error('apiserver said no'));
    await flushMicrotasks();
    expect(r.calls).toHaveLength(1);
    await h.clock.advance(5);
    expect(r.calls).toHaveLength(2);
    r.calls[1].finish(new Error('apiserver said no'));
    await h.clock.advance(9);
    expect(r.calls).toHaveLength(2);
    await h.clock.advance(1);
    expect(r.calls).toHaveLength(3);

    const errorLine = h.logs.find((l) => l.severity === 'error')!;
    expect(errorLine).toMatchObject({ controller: 'widgets', namespace: 'ns', name: 'flaky' });
    expect(errorLine.error).toContain('apiserver said no');
    expect(
      await counter(h.registry, 'controller_runtime_reconcile_errors_total', { controller: 'widgets' }),
    ).toBe(2);
    expect(await counter(h.registry, 'controller_runtime_reconcile_total', { result: 'error' })).toBe(2);

    // The same single worker still serves other keys.
    r.calls[2].finish(done);
    h.source.emit({ type: 'added', object: obj('healthy') });
    await flushMicrotasks();
    expect(r.names()).toEqual(['flaky', 'flaky', 'flaky', 'healthy']);
    r.calls[3].finish(done);
    h.stop.abort();
    await h.running;
  });

  it('retries a reconcile that failed on a 429 no sooner than the Retry-After it carries', async () => {
    const r = new ScriptedReconciler();
    const h = harness(r);
    h.source.emit({ type: 'added', object: obj('shed') });
    await flushMicrotasks();
    const refused = new KubeApiError(
      429,
      { verb: 'create', kind: PodKind, namespace: 'ns' },
      undefined,
      'Too many requests, please try again later.',
      3,
    );
    // Wrapped, as a reconciler that adds context to what failed would.
    r.calls[0].finish(new Error('creating the pod', { cause: refused }));
    await h.clock.advance(2_999);
    expect(r.calls).toHaveLength(1);
    await h.clock.advance(1);
    expect(r.calls).toHaveLength(2);
    r.calls[1].finish(done);
    h.stop.abort();
    await h.running;
  });

  it('survives a reconciler that throws synchronously', async () => {
    let calls = 0;
    const h = harness({
      reconcile: () => {
        calls++;
        if (calls === 1) throw new Error('not even a promise');
        return Promise.resolve(done);
      },
    });
    h.source.emit({ type: 'added', object: obj('a') });
    await flushMicrotasks();
    await h.clock.advance(5);
    expect(calls).toBe(2);
    expect(await counter(h.registry, 'controller_runtime_reconcile_total', { result: 'success' })).toBe(1);
    h.stop.abort();
    await h.running;
  });

  it('forgets the backoff after success, so the next failure starts from 5 ms again', async () => {
    const r = new ScriptedReconciler();
    const h = harness(r);
    h.source.emit({ type: 'added', object: obj('a', '1') });
    await flushMicrotasks();
    r.calls[0].finish(new Error('x'));
    await h.clock.advance(5);
    r.calls[1].finish(new Error('x'));
    await h.clock.advance(10);
    r.calls[2].finish(done);
    await flushMicrotasks();
    expect(h.controller.queue.numRequeues('ns/a')).toBe(0);
    h.source.emit({ type: 'modified', object: obj('a', '2'), oldObject: obj('a', '1') });
    await flushMicrotasks();
    r.calls[3].finish(new Error('x'));
    await h.clock.advance(5);
    expect(r.calls).toHaveLength(5);
    r.calls[4].finish(done);
    h.stop.abort();
    await h.running;
  });

  it('reconciles again after requeueAfterMs, without backoff', async () => {
    const r = new ScriptedReconciler();
    const h = harness(r);
    h.source.emit({ type: 'added', object: obj('a') });
    await flushMicrotasks();
    r.calls[0].finish(requeueAfter(30_000));
    await h.clock.advance(29_999);
    expect(r.calls).toHaveLength(1);
    await h.clock.advance(1);
    expect(r.calls).toHaveLength(2);
    expect(await counter(h.registry, 'controller_runtime_reconcile_total', { result: 'requeue_after' })).toBe(
      1,
    );
    expect(h.controller.queue.numRequeues('ns/a')).toBe(0);
    r.calls[1].finish({ requeue: true });
    await h.clock.advance(5);
    expect(r.calls).toHaveLength(3);
    expect(await counter(h.registry, 'controller_runtime_reconcile_total', { result: 'requeue' })).toBe(1);
    r.calls[2].finish(done);
    h.stop.abort();
    await h.running;
  });

  it('forgets the failure history on a requeueAfter result, so a later failure backs off from 5 ms again', async () => {
    const r = new ScriptedReconciler();
    const h = harness(r);
    h.source.emit({ type: 'added', object: obj('a') });
    await flushMicrotasks();
    // Three failures: retried after 5, 10 and 20 ms.
    r.calls[0].finish(new Error('x'));
    await h.clock.advance(5);
    r.calls[1].finish(new Error('x'));
    await h.clock.advance(10);
    r.calls[2].finish(new Error('x'));
    await h.clock.advance(20);
    expect(r.calls.length).toBe(4);

    // Then it gets through and asks to look again in a second.
    r.calls[3].finish(requeueAfter(1_000));
    await h.clock.advance(1_000);
    expect(r.calls.length).toBe(5);

    // The next failure is a first failure again: retried after 5 ms, not 40.
    r.calls[4].finish(new Error('x'));
    await h.clock.advance(4);
    expect(r.calls.length).toBe(5);
    await h.clock.advance(1);
    expect(r.calls.length).toBe(6);
    r.calls[5].finish(done);
    h.stop.abort();
    await h.running;
  });

  it('queues events while not started and reconciles every cached object once it starts', async () => {
    const r = new ScriptedReconciler();
    const h = harness(r, {}, false);
    h.source.emit({ type: 'added', object: obj('early') });
    await flushMicrotasks();
    expect(r.calls).toHaveLength(0);
    expect(h.controller.queue.len()).toBe(1);
    const stop = new AbortController();
    const running = h.controller.start(stop.signal);
    await flushMicrotasks();
    expect(r.names()).toEqual(['early']);
    r.calls[0].finish(done);
    stop.abort();
    await running;
  });

  it('on stop takes no new keys but lets the reconcile in flight finish', async () => {
    const r = new ScriptedReconciler();
    const h = harness(r);
    h.source.emit({ type: 'added', object: obj('in-flight') });
    await flushMicrotasks();
    h.source.emit({ type: 'added', object: obj('waiting') });
    let stopped = false;
    void h.running.then(() => (stopped = true));
    h.stop.abort();
    await flushMicrotasks();
    expect(stopped).toBe(false);
    expect(r.calls[0].ctx.signal.aborted).toBe(false);
    r.calls[0].finish(done);
    await flushMicrotasks();
    expect(stopped).toBe(true);
    expect(r.names()).toEqual(['in-flight']);
  });

  it('aborts the signal of a reconcile in flight when cancelled', async () => {
    const r = new ScriptedReconciler();
    const h = harness(r);
    h.source.emit({ type: 'added', object: obj('a') });
    await flushMicrotasks();
    h.stop.abort();
    h.cancel.abort(new Error('leadership lost'));
    expect(r.calls[0].ctx.signal.aborted).toBe(true);
    r.calls[0].finish(new Error('aborted'));
    await h.running;
  });

  it('aborts a reconcile signal after reconcileTimeoutMs', async () => {
    const r = new ScriptedReconciler();
    const h = harness(r, { reconcileTimeoutMs: 1000 });
    h.source.emit({ type: 'added', object: obj('slow') });
    await flushMicrotasks();
    await h.clock.advance(999);
    expect(r.calls[0].ctx.signal.aborted).toBe(false);
    await h.clock.advance(1);
    expect(r.calls[0].ctx.signal.aborted).toBe(true);
    r.calls[0].finish(done);
    h.stop.abort();
    await h.running;
  });

  it('counts panics, terminal errors and timeouts as controller-runtime does, from zero', async () => {
    const r = new ScriptedReconciler();
    const h = harness(r, { reconcileTimeoutMs: 1000 });
    const of = (name: string) => counter(h.registry, name, { controller: 'widgets' });
    for (const name of [
      'controller_runtime_reconcile_panics_total',
      'controller_runtime_terminal_reconcile_errors_total',
      'controller_runtime_reconcile_timeouts_total',
    ]) {
      expect(await of(name)).toBe(0);
    }
    h.source.emit({ type: 'added', object: obj('buggy') });
    h.source.emit({ type: 'added', object: obj('refused') });
    h.source.emit({ type: 'added', object: obj('slow') });
    await flushMicrotasks();
    // A property read of undefined: what a nil dereference is in Go.
    r.calls[0].finish(new TypeError("Cannot read properties of undefined (reading 'spec')"));
    await flushMicrotasks();
    r.calls[1].finish(new TerminalError('the spec can never work'));
    await flushMicrotasks();
    await h.clock.advance(1000);
    r.calls[2].finish(new Error('aborted by the signal'));
    await flushMicrotasks();
    expect(await of('controller_runtime_reconcile_panics_total')).toBe(1);
    expect(await of('controller_runtime_terminal_reconcile_errors_total')).toBe(1);
    expect(await of('controller_runtime_reconcile_timeouts_total')).toBe(1);
    expect(await of('controller_runtime_reconcile_errors_total')).toBe(3);
    h.stop.abort();
    h.cancel.abort();
    for (const call of r.calls.slice(3)) call.finish(done);
    await h.running;
  });

  it('reports unhealthy while a reconcile is stuck past the threshold', async () => {
    const r = new ScriptedReconciler();
    const h = harness(r, { stuckReconcileThresholdMs: 60_000 });
    h.source.emit({ type: 'added', object: obj('wedged') });
    await flushMicrotasks();
    await h.clock.advance(60_000);
    expect(h.controller.health().healthy).toBe(true);
    await h.clock.advance(1);
    const health = h.controller.health();
    expect(health.healthy).toBe(false);
    expect(health.reason).toContain('ns/wedged');
    r.calls[0].finish(done);
    await flushMicrotasks();
    expect(h.controller.health().healthy).toBe(true);
    h.stop.abort();
    await h.running;
  });

  it('keeps the informer going when a predicate throws, and says which object was dropped', async () => {
    const r = new ScriptedReconciler();
    const h = harness(r, {}, false);
    const source = new FakeSource<KubeObject>();
    h.controller.watch(source, enqueueObject(), [
      {
        create: (o) => {
          if (o.metadata?.name === 'bad') throw new Error('predicate bug');
          return true;
        },
      },
    ]);
    source.emit({ type: 'added', object: obj('bad') });
    source.emit({ type: 'added', object: obj('good') });
    expect(h.controller.queue.len()).toBe(1);
    expect(h.logs.find((l) => l.severity === 'error')).toMatchObject({ object: 'ns/bad' });
  });

  it('enqueues the controlling owner for an owned object', async () => {
    const r = new ScriptedReconciler();
    const h = harness(r);
    const pods = new FakeSource<KubeObject>();
    h.controller.watch(
      pods,
      enqueueControllingOwner({
        group: 'example.com',
        version: 'v1',
        kind: 'Widget',
        plural: 'widgets',
        namespaced: true,
      }),
    );
    pods.emit({
      type: 'added',
      object: obj('widget-pod', '1', {
        ownerReferences: [
          { apiVersion: 'example.com/v1', kind: 'Widget', name: 'owner', uid: 'u', controller: true },
        ],
      }),
    });
    await flushMicrotasks();
    expect(r.calls.map((c) => c.req)).toEqual([{ namespace: 'ns', name: 'owner' }]);
    r.calls[0].finish(done);
    h.stop.abort();
    await h.running;
  });
});
