import { Registry } from 'prom-client';
import { FakeClock, flushMicrotasks } from '../testing';
import {
  ExponentialBackoffRateLimiter,
  MaxOfRateLimiter,
  TokenBucketRateLimiter,
  defaultControllerRateLimiter,
} from './rate-limiter';
import { RateLimitingQueue } from './rate-limiting-queue';

function newQueue(clock = new FakeClock(), registry = new Registry()) {
  const queue = new RateLimitingQueue({ name: 'test', clock, registry });
  return { queue, clock, registry };
}

/** Takes every key that is ready now, without waiting. */
async function drainReady(queue: RateLimitingQueue): Promise<string[]> {
  const keys: string[] = [];
  while (queue.len() > 0) {
    const key = await queue.get();
    if (key === undefined) break;
    keys.push(key);
  }
  return keys;
}

async function metricValue(
  registry: Registry,
  name: string,
  labels: Record<string, string> = { name: 'test' },
) {
  const metric = registry.getSingleMetric(name);
  if (metric === undefined) throw new Error(`metric ${name} is not registered`);
  const data = await metric.get();
  const match = data.values.find(
    (v) =>
      Object.entries(labels).every(([k, val]) => v.labels[k] === val) && !('metricName' in v && v.metricName),
  );
  return match?.value;
}

describe('RateLimitingQueue', () => {
  describe('deduplication', () => {
    it('queues a key once however often it is added', async () => {
      const { queue } = newQueue();
      queue.add('ns/a');
      queue.add('ns/a');
      queue.add('ns/b');
      queue.add('ns/a');
      expect(queue.len()).toBe(2);
      expect(await drainReady(queue)).toEqual(['ns/a', 'ns/b']);
    });

    it('hands keys out in the order they were first added', async () => {
      const { queue } = newQueue();
      for (const k of ['c', 'a', 'b', 'a', 'c']) queue.add(k);
      expect(await drainReady(queue)).toEqual(['c', 'a', 'b']);
    });
  });

  describe('one worker per key', () => {
    it('does not hand out a key that is being processed, even when it is added again', async () => {
      const { queue } = newQueue();
      queue.add('k');
      const first = await queue.get();
      expect(first).toBe('k');
      queue.add('k');
      expect(queue.len()).toBe(0);

      let second: string | undefined;
      void queue.get().then((k) => (second = k));
      await flushMicrotasks();
      expect(second).toBeUndefined();

      queue.done('k');
      await flushMicrotasks();
      expect(second).toBe('k');
    });

    it('queues a key re-added during processing exactly once after done', async () => {
      const { queue } = newQueue();
      queue.add('k');
      await queue.get();
      queue.add('k');
      queue.add('k');
      queue.done('k');
      expect(queue.len()).toBe(1);
      expect(await drainReady(queue)).toEqual(['k']);
      queue.done('k');
      expect(queue.len()).toBe(0);
    });

    it('does not queue a processed key again on done when nobody added it meanwhile', async () => {
      const { queue } = newQueue();
      queue.add('k');
      await queue.get();
      queue.done('k');
      expect(queue.len()).toBe(0);
    });

    it('gives other keys to other workers while one key is processed', async () => {
      const { queue } = newQueue();
      queue.add('a');
      queue.add('b');
      const taken = await Promise.all([queue.get(), queue.get()]);
      expect(taken.sort()).toEqual(['a', 'b']);
      expect(queue.inFlight()).toBe(2);
    });

    it('wakes a waiting worker when a key arrives', async () => {
      const { queue } = newQueue();
      const pending = queue.get();
      queue.add('late');
      await expect(pending).resolves.toBe('late');
    });
  });

  describe('addAfter', () => {
    it('queues the key only once its delay has passed', async () => {
      const { queue, clock } = newQueue();
      queue.addAfter('k', 100);
      expect(queue.len()).toBe(0);
      await clock.advance(99);
      expect(queue.len()).toBe(0);
      await clock.advance(1);
      expect(queue.len()).toBe(1);
    });

    it('releases delayed keys in the order they fall due, not the order they were added', async () => {
      const { queue, clock } = newQueue();
      queue.addAfter('late', 300);
      queue.addAfter('early', 100);
      queue.addAfter('middle', 200);
      queue.addAfter('same-as-middle', 200);
      await clock.advance(300);
      expect(await drainReady(queue)).toEqual(['early', 'middle', 'same-as-middle', 'late']);
    });

    it('keeps the earlier time when a waiting key is added again with a later one', async () => {
      const { queue, clock } = newQueue();
      queue.addAfter('k', 100);
      queue.addAfter('k', 1000);
      await clock.advance(100);
      expect(await drainReady(queue)).toEqual(['k']);
      queue.done('k');
      await clock.advance(1000);
      expect(queue.len()).toBe(0);
    });

    it('moves a waiting key forward when it is added again with an earlier time', async () => {
      const { queue, clock } = newQueue();
      queue.addAfter('k', 1000);
      queue.addAfter('k', 50);
      await clock.advance(50);
      expect(await drainReady(queue)).toEqual(['k']);
      queue.done('k');
      await clock.advance(1000);
      expect(queue.len()).toBe(0);
    });

    it('queues at once for a zero or negative delay', () => {
      const { queue } = newQueue();
      queue.addAfter('zero', 0);
      queue.addAfter('negative', -5);
      expect(queue.len()).toBe(2);
    });

    it('merges a delayed key that falls due while it is already queued', async () => {
      const { queue, clock } = newQueue();
      queue.add('k');
      queue.addAfter('k', 10);
      await clock.advance(10);
      expect(queue.len()).toBe(1);
    });
  });

  describe('rate limiting', () => {
    it('backs a failing key off exponentially from 5 ms, and forget starts it over', async () => {
      const { queue, clock } = newQueue();
      const observedDelays: number[] = [];
      for (let attempt = 0; attempt < 5; attempt++) {
        const before = clock.now();
        queue.addRateLimited('k');
        let waited = 0;
        while (queue.len() === 0) {
          await clock.advance(1);
          waited++;
        }
        observedDelays.push(clock.now() - before);
        expect(waited).toBeGreaterThan(0);
        await queue.get();
        queue.done('k');
      }
      expect(observedDelays).toEqual([5, 10, 20, 40, 80]);
      expect(queue.numRequeues('k')).toBe(5);

      queue.forget('k');
      expect(queue.numRequeues('k')).toBe(0);
      queue.addRateLimited('k');
      await clock.advance(4);
      expect(queue.len()).toBe(0);
      await clock.advance(1);
      expect(queue.len()).toBe(1);
    });

    it('tracks backoff per key, so one failing key does not slow another', () => {
      const limiter = new ExponentialBackoffRateLimiter(5, 1_000_000);
      for (let i = 0; i < 10; i++) limiter.when('failing');
      expect(limiter.when('failing')).toBe(5 * 2 ** 10);
      expect(limiter.when('fresh')).toBe(5);
    });

    it('caps the per-key backoff at 1000 seconds', () => {
      const limiter = new ExponentialBackoffRateLimiter(5, 1_000_000);
      const delays = Array.from({ length: 2000 }, () => limiter.when('k'));
      expect(Math.max(...delays)).toBe(1_000_000);
      expect(delays[17]).toBe(655_360);
      expect(delays[18]).toBe(1_000_000);
      expect(delays[1999]).toBe(1_000_000);
    });

    it('lets a burst of 100 through the bucket and then spaces retries at 10 per second', async () => {
      const clock = new FakeClock();
      const bucket = new TokenBucketRateLimiter(10, 100, clock);
      const burst = Array.from({ length: 100 }, () => bucket.when());
      expect(burst.every((d) => d === 0)).toBe(true);
      expect(bucket.when()).toBeCloseTo(100);
      expect(bucket.when()).toBeCloseTo(200);
      await clock.advance(1000);
      // 1 s refills 10 tokens; two were borrowed already, so the next eight are free.
      const afterRefill = Array.from({ length: 9 }, () => bucket.when());
      expect(afterRefill.slice(0, 8).every((d) => d === 0)).toBe(true);
      expect(afterRefill[8]).toBeCloseTo(100);
    });

    it('never refills the bucket beyond its burst', async () => {
      const clock = new FakeClock();
      const bucket = new TokenBucketRateLimiter(10, 100, clock);
      await clock.advance(3_600_000);
      const delays = Array.from({ length: 101 }, () => bucket.when());
      expect(delays.filter((d) => d === 0)).toHaveLength(100);
    });

    it('makes the default limiter wait the longer of the key backoff and the bucket', async () => {
      const clock = new FakeClock();
      const limiter = defaultControllerRateLimiter(clock);
      // 100 distinct keys drain the bucket without building any per-key backoff.
      for (let i = 0; i < 100; i++) expect(limiter.when(`k${i}`)).toBe(5);
      expect(limiter.when('next')).toBeCloseTo(100);
      expect(limiter.numRequeues('k0')).toBe(1);
      limiter.forget('k0');
      expect(limiter.numRequeues('k0')).toBe(0);
    });

    it('asks every limiter, so each records the attempt', () => {
      const a = new ExponentialBackoffRateLimiter(1, 1000);
      const b = new ExponentialBackoffRateLimiter(3, 1000);
      const max = new MaxOfRateLimiter(a, b);
      expect(max.when('k')).toBe(3);
      expect(max.when('k')).toBe(6);
      expect(a.numRequeues('k')).toBe(2);
      expect(b.numRequeues('k')).toBe(2);
    });

    it('spreads a storm of rate-limited keys out at the bucket rate', async () => {
      const { queue, clock } = newQueue();
      for (let i = 0; i < 120; i++) queue.addRateLimited(`k${i}`);
      await clock.advance(5);
      expect(queue.len()).toBe(100);
      await clock.advance(1000);
      expect(queue.len()).toBe(110);
      await clock.advance(1000);
      expect(queue.len()).toBe(120);
    });
  });

  describe('shutdown', () => {
    it('answers undefined to a worker waiting in get', async () => {
      const { queue } = newQueue();
      const pending = queue.get();
      queue.shutDown();
      await expect(pending).resolves.toBeUndefined();
    });

    it('hands out no more keys and ignores new adds', async () => {
      const { queue, clock } = newQueue();
      queue.add('queued');
      queue.addAfter('delayed', 10);
      queue.shutDown();
      queue.add('after');
      await clock.advance(100);
      await expect(queue.get()).resolves.toBeUndefined();
      expect(clock.pendingTimers()).toBe(0);
    });

    it('with drain waits for every in-flight key to be done', async () => {
      const { queue } = newQueue();
      queue.add('a');
      queue.add('b');
      const a = await queue.get();
      const b = await queue.get();
      let drained = false;
      const drain = queue.shutDownWithDrain().then(() => (drained = true));
      queue.done(a!);
      await flushMicrotasks();
      expect(drained).toBe(false);
      queue.done(b!);
      await drain;
      expect(drained).toBe(true);
    });

    it('with drain resolves at once when nothing is in flight', async () => {
      const { queue } = newQueue();
      queue.add('never-taken');
      await expect(queue.shutDownWithDrain()).resolves.toBeUndefined();
    });

    it('does not queue a key again on done after shutdown', async () => {
      const { queue } = newQueue();
      queue.add('k');
      await queue.get();
      queue.add('k');
      queue.shutDown();
      queue.done('k');
      expect(queue.len()).toBe(0);
    });
  });

  describe('metrics', () => {
    it('reports depth, adds, retries and durations under the labels controller-runtime uses', async () => {
      const { queue, clock, registry } = newQueue();
      queue.add('a');
      queue.add('a');
      queue.add('b');
      expect(await metricValue(registry, 'workqueue_depth')).toBe(2);
      expect(await metricValue(registry, 'workqueue_adds_total')).toBe(2);

      await clock.advance(250);
      const key = await queue.get();
      expect(await metricValue(registry, 'workqueue_depth')).toBe(1);
      await clock.advance(1500);
      expect(await metricValue(registry, 'workqueue_longest_running_processor_seconds')).toBeCloseTo(1.5);
      expect(await metricValue(registry, 'workqueue_unfinished_work_seconds')).toBeCloseTo(1.5);
      queue.done(key!);
      expect(await metricValue(registry, 'workqueue_longest_running_processor_seconds')).toBe(0);

      queue.addRateLimited('a');
      queue.addAfter('c', 10);
      queue.addAfter('d', 0);
      expect(await metricValue(registry, 'workqueue_retries_total')).toBe(2);

      const text = await registry.metrics();
      expect(text).toMatch(/workqueue_queue_duration_seconds_sum\{name="test",controller="test"\} 0\.25\b/);
      expect(text).toMatch(/workqueue_work_duration_seconds_sum\{name="test",controller="test"\} 1\.5\b/);
      expect(text).toMatch(/workqueue_depth\{name="test",controller="test",priority="0"\} 2\b/);
      expect(text).toContain(
        'workqueue_queue_duration_seconds_bucket{le="1000",name="test",controller="test"}',
      );
    });

    it('keeps two queues apart in one registry', async () => {
      const registry = new Registry();
      const clock = new FakeClock();
      const one = new RateLimitingQueue({ name: 'one', clock, registry });
      const two = new RateLimitingQueue({ name: 'two', clock, registry });
      one.add('x');
      two.add('x');
      two.add('y');
      expect(await metricValue(registry, 'workqueue_depth', { name: 'one' })).toBe(1);
      expect(await metricValue(registry, 'workqueue_depth', { name: 'two' })).toBe(2);
      await one.get();
      await clock.advance(1000);
      expect(
        await metricValue(registry, 'workqueue_longest_running_processor_seconds', { name: 'one' }),
      ).toBe(1);
      expect(
        await metricValue(registry, 'workqueue_longest_running_processor_seconds', { name: 'two' }),
      ).toBe(0);
    });
  });
});
