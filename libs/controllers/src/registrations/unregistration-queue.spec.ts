import { Registry } from 'prom-client';
import type { EphemeralRunner } from '@aro/api';
import { ActionsError } from '@aro/actions';
import type { ActionsServiceClient } from '@aro/actions';
import { silentLogger } from '@aro/observability';
import { ActionsClientProvider, UnregistrationQueue } from './unregistration-queue';

/**
 * A stand-in for the Actions service's registrations: what the tests assert on is which
 * registrations are left, as they would on the simulator.
 */
class Registrations implements ActionsClientProvider {
  readonly held = new Map<number, { busy: boolean; failuresLeft: number }>();
  removeCalls = 0;
  /** Answer every removal with a bare HTTP 404 (no runner-not-found exception), as a wrong URL would. */
  bare404 = false;

  register(id: number, opts: { busy?: boolean; failures?: number } = {}): void {
    this.held.set(id, { busy: opts.busy ?? false, failuresLeft: opts.failures ?? 0 });
  }

  async getActionsClient(): Promise<ActionsServiceClient> {
    return {
      removeRunner: async (id: number) => {
        this.removeCalls++;
        if (this.bare404) {
          throw new ActionsError({
            kind: 'NotFound',
            statusCode: 404,
            detail: 'Not Found',
            method: 'DELETE',
            url: 'agents/x',
          });
        }
        const registration = this.held.get(id);
        if (!registration) {
          throw new ActionsError({
            kind: 'RunnerNotFound',
            statusCode: 404,
            detail: 'runner not found',
            method: 'DELETE',
            url: 'agents/x',
          });
        }
        if (registration.failuresLeft > 0) {
          registration.failuresLeft--;
          throw new ActionsError({
            kind: 'Other',
            statusCode: 500,
            detail: 'boom',
            method: 'DELETE',
            url: 'agents/x',
          });
        }
        if (registration.busy) {
          throw new ActionsError({
            kind: 'JobStillRunning',
            statusCode: 400,
            detail: 'job still running',
            method: 'DELETE',
            url: 'agents/x',
          });
        }
        this.held.delete(id);
      },
    } as unknown as ActionsServiceClient;
  }
}

const runner = (name: string): EphemeralRunner => ({
  metadata: { name, namespace: 'ns' },
  spec: { githubConfigUrl: 'https://github.com/o', githubConfigSecret: 's', runnerScaleSetId: 1 },
});

async function eventually(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('UnregistrationQueue', () => {
  let service: Registrations;
  let registry: Registry;
  let stop: AbortController;
  let running: Promise<void> | undefined;

  const start = (queue: UnregistrationQueue) => {
    stop = new AbortController();
    running = queue.start(stop.signal);
  };

  beforeEach(() => {
    service = new Registrations();
    registry = new Registry();
    running = undefined;
  });

  afterEach(async () => {
    stop?.abort();
    await running;
  });

  const newQueue = (opts: Partial<ConstructorParameters<typeof UnregistrationQueue>[0]> = {}) =>
    new UnregistrationQueue({
      actions: service,
      logger: silentLogger,
      registry,
      retryInitialMs: 5,
      jobStillRunningRetryMs: 20,
      ...opts,
    });

  it('removes a queued registration from the service', async () => {
    service.register(7);
    const queue = newQueue();
    start(queue);
    expect(queue.push(runner('r1'), 7)).toBe(true);
    await eventually(() => !service.held.has(7) && queue.size() === 0);
  });

  it('takes a registration once however often it is pushed', async () => {
    service.register(7);
    const queue = newQueue();
    expect(queue.push(runner('r1'), 7)).toBe(true);
    expect(queue.push(runner('r1'), 7)).toBe(false);
    start(queue);
    await eventually(() => queue.size() === 0);
    expect(service.removeCalls).toBe(1);
  });

  it('counts a registration that is already gone as removed', async () => {
    const queue = newQueue();
    start(queue);
    queue.push(runner('r1'), 9);
    await eventually(() => queue.size() === 0);
    expect(await registry.getSingleMetricAsString('aro_runner_unregistrations_total')).toContain(
      'aro_runner_unregistrations_total{outcome="already_gone"} 1',
    );
  });

  it('asks again about a runner still executing a job until the job ends', async () => {
    service.register(7, { busy: true });
    const queue = newQueue();
    start(queue);
    queue.push(runner('r1'), 7);
    await eventually(() => service.removeCalls >= 2);
    expect(service.held.has(7)).toBe(true);
    service.held.get(7)!.busy = false;
    await eventually(() => !service.held.has(7));
  });

  it('retries other failures with backoff and gives up after maxAttempts', async () => {
    service.register(7, { failures: 2 });
    service.register(8, { failures: 100 });
    const queue = newQueue({ maxAttempts: 3 });
    start(queue);
    queue.push(runner('r1'), 7);
    queue.push(runner('r2'), 8);
    await eventually(() => queue.size() === 0);
    expect(service.held.has(7)).toBe(false);
    expect(service.held.has(8)).toBe(true);
    const metrics = await registry.getSingleMetricAsString('aro_runner_unregistrations_total');
    expect(metrics).toContain('outcome="failed"} 1');
  });

  it('does not spend the retry budget on busy answers: a long job, then one failure, still removes', async () => {
    service.register(7, { busy: true });
    const queue = newQueue({ maxAttempts: 3, jobStillRunningRetryMs: 1 });
    start(queue);
    queue.push(runner('r1'), 7);
    await eventually(() => service.removeCalls >= 5);
    const registration = service.held.get(7)!;
    registration.busy = false;
    registration.failuresLeft = 1;
    await eventually(() => queue.size() === 0);
    expect(service.held.has(7)).toBe(false);
    expect(await registry.getSingleMetricAsString('aro_runner_unregistrations_total')).not.toContain(
      'outcome="failed"',
    );
  });

  it("does not take a bare 404 for a removed runner: only the service's runner-not-found answer", async () => {
    service.register(7);
    service.bare404 = true;
    const queue = newQueue({ maxAttempts: 2 });
    start(queue);
    queue.push(runner('r1'), 7);
    await eventually(() => queue.size() === 0);
    const metrics = await registry.getSingleMetricAsString('aro_runner_unregistrations_total');
    expect(metrics).not.toContain('outcome="already_gone"');
    expect(metrics).toContain('outcome="failed"} 1');
  });

  it('drains what is ready on shutdown and drops what waits on a busy runner', async () => {
    service.register(7);
    service.register(8, { busy: true });
    const queue = newQueue({ jobStillRunningRetryMs: 60_000 });
    queue.push(runner('r2'), 8);
    start(queue);
    await eventually(() => service.removeCalls >= 1);
    queue.push(runner('r1'), 7);
    stop.abort();
    await running;
    expect(service.held.has(7)).toBe(false);
    expect(service.held.has(8)).toBe(true);
    expect(queue.size()).toBe(0);
  });
});

describe('UnregistrationQueue on a fake clock', () => {
  afterEach(() => {
    jest.useRealTimers();
  });

  it('processes a push after 48 hours idle without a stack overflow', async () => {
    jest.useFakeTimers();
    const service = new Registrations();
    service.register(1);
    const queue = new UnregistrationQueue({
      actions: service,
      logger: silentLogger,
      registry: new Registry(),
    });
    const stop = new AbortController();
    const running = queue.start(stop.signal);
    // Idle workers nap 30 s at a time: two days is thousands of naps per worker.
    for (let hour = 0; hour < 48; hour++) await jest.advanceTimersByTimeAsync(60 * 60_000);
    expect(() => queue.push(runner('r1'), 1)).not.toThrow();
    await jest.advanceTimersByTimeAsync(1_000);
    expect(service.held.has(1)).toBe(false);
    expect(queue.size()).toBe(0);
    stop.abort();
    await jest.advanceTimersByTimeAsync(1_000);
    await expect(running).resolves.toBeUndefined();
  }, 60_000);
});

describe('UnregistrationQueue options', () => {
  it('keeps its defaults for options passed as undefined', async () => {
    const service = new Registrations();
    service.register(1);
    const queue = new UnregistrationQueue({
      actions: service,
      logger: silentLogger,
      registry: new Registry(),
      workers: undefined,
    });
    const stop = new AbortController();
    const running = queue.start(stop.signal);
    queue.push(runner('r1'), 1);
    await eventually(() => !service.held.has(1));
    stop.abort();
    await running;
  });
});
