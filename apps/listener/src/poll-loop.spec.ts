import { Registry } from 'prom-client';
import type { ResourceKind } from '@aro/api';
import {
  ActionsError,
  type RunnerScaleSet,
  type RunnerScaleSetMessage,
  type RunnerScaleSetSession,
  type RunnerScaleSetStatistic,
} from '@aro/actions';
import type { KubeObject } from '@aro/kube';
import { FakeClock } from '@aro/kube/testing';
import { silentLogger } from '@aro/observability';
import { defaultBackoffPolicies } from './failures';
import { GhaMetrics } from './gha-metrics';
import { JobBookkeeping } from './job-bookkeeping';
import { ListenerMetrics } from './listener-metrics';
import { PollLoop, QueueApi } from './poll-loop';
import { PatchClient, Scaler } from './scaler';
import { EphemeralRunnerSetScaling } from './scaling';
import { MessageSession, SessionApi } from './session';

const zero = '0001-01-01T00:00:00Z';

function stats(assigned: number, busy = 0): RunnerScaleSetStatistic {
  return {
    totalAvailableJobs: 0,
    totalAcquiredJobs: 0,
    totalAssignedJobs: assigned,
    totalRunningJobs: 0,
    totalRegisteredRunners: 0,
    totalBusyRunners: busy,
    totalIdleRunners: 0,
  };
}

function job(type: string, id: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    messageType: type,
    runnerRequestId: id,
    repositoryName: 'hello',
    ownerName: 'octo',
    jobId: `job-${id}`,
    jobWorkflowRef: 'octo/hello/.github/workflows/ci.yml@refs/heads/main',
    jobDisplayName: 'build',
    workflowRunId: 1000 + id,
    eventName: 'push',
    requestLabels: ['set'],
    queueTime: zero,
    scaleSetAssignTime: zero,
    runnerAssignTime: zero,
    finishTime: zero,
    ...extra,
  };
}

function message(
  id: number,
  s: RunnerScaleSetStatistic,
  jobs: Array<Record<string, unknown>>,
): RunnerScaleSetMessage {
  return {
    messageId: id,
    messageType: 'RunnerScaleSetJobMessages',
    body: JSON.stringify(jobs),
    statistics: s,
  };
}

/**
 * The Actions service as the loop sees it: a queue that holds each poll until a message is pushed
 * (as the long poll does), acknowledgements, acquisitions, and scripted failures.
 */
class FakeActions implements SessionApi, QueueApi {
  private readonly pending: RunnerScaleSetMessage[] = [];
  private wake: (() => void) | undefined;
  polls: Array<{ lastMessageId: number; maxCapacity: number; token: string }> = [];
  deleted: number[] = [];
  acquireCalls: number[][] = [];
  grant: (ids: number[]) => number[] = (ids) => ids;
  token = 't1';
  failNextPoll: ActionsError | undefined;
  scaleSetStats = stats(0);
  sessions = 0;

  push(m: RunnerScaleSetMessage): void {
    this.pending.push(m);
    this.wake?.();
  }

  createMessageSession(): Promise<RunnerScaleSetSession> {
    this.sessions++;
    return Promise.resolve({
      sessionId: `s${this.sessions}`,
      ownerName: 'pod',
      messageQueueUrl: 'https://q/messages',
      messageQueueAccessToken: this.token,
      statistics: stats(0),
    });
  }

  refreshMessageSession(): Promise<RunnerScaleSetSession> {
    this.token = `${this.token}+`;
    return Promise.resolve({
      sessionId: `s${this.sessions}`,
      ownerName: 'pod',
      messageQueueUrl: 'https://q/messages',
      messageQueueAccessToken: this.token,
      statistics: stats(0),
    });
  }

  deleteMessageSession(): Promise<void> {
    return Promise.resolve();
  }

  async getMessage(
    _url: string,
    token: string,
    lastMessageId: number,
    maxCapacity: number,
    opts?: { signal?: AbortSignal },
  ): Promise<RunnerScaleSetMessage | undefined> {
    this.polls.push({ lastMessageId, maxCapacity, token });
    if (this.failNextPoll) {
      const err = this.failNextPoll;
      this.failNextPoll = undefined;
      throw err;
    }
    if (token !== this.token) throw queue401();
    while (this.pending.length === 0) {
      await new Promise<void>((resolve, reject) => {
        this.wake = resolve;
        opts?.signal?.addEventListener('abort', () => reject(opts.signal?.reason), { once: true });
      });
    }
    return this.pending.shift();
  }

  deleteMessage(_url: string, token: string, messageId: number): Promise<void> {
    if (token !== this.token) return Promise.reject(queue401());
    this.deleted.push(messageId);
    return Promise.resolve();
  }

  acquireJobs(_id: number, _token: string, ids: number[]): Promise<number[]> {
    this.acquireCalls.push(ids);
    return Promise.resolve(this.grant(ids));
  }

  getRunnerScaleSetById(): Promise<RunnerScaleSet> {
    return Promise.resolve({ statistics: this.scaleSetStats } as RunnerScaleSet);
  }
}

function queue401(): ActionsError {
  return new ActionsError({
    kind: 'MessageQueueTokenExpired',
    method: 'GET',
    url: 'https://q/messages',
    statusCode: 401,
    detail: 'expired',
  });
}

/** An apiserver holding the set's spec and the runners' statuses, recording the order of writes. */
class FakeKube implements PatchClient {
  writes: string[] = [];
  spec: { replicas?: number; patchID?: number } = {};
  statuses = new Map<string, Record<string, unknown>>();
  mergePatch<T extends KubeObject>(_k: ResourceKind, _ns: string, _n: string, patch: object): Promise<T> {
    this.spec = { ...this.spec, ...(patch as { spec: object }).spec };
    this.writes.push(`ers replicas=${this.spec.replicas}`);
    return Promise.resolve({} as T);
  }
  mergePatchStatus<T extends KubeObject>(
    _k: ResourceKind,
    _ns: string,
    name: string,
    patch: object,
  ): Promise<T> {
    this.statuses.set(name, (patch as { status: Record<string, unknown> }).status);
    this.writes.push(`status ${name}`);
    return Promise.resolve({} as T);
  }
}

function setup(maxRunners = 10, minRunners = 0, bookkeeping = { qps: 1000, burst: 1000 }) {
  const clock = new FakeClock();
  const actions = new FakeActions();
  const kube = new FakeKube();
  const registry = new Registry();
  const logger = silentLogger;
  const session = new MessageSession(actions, {
    scaleSetId: 1,
    scaleSetName: 'set',
    owner: 'pod',
    clock,
    logger,
    backoff: defaultBackoffPolicies,
  });
  const scaler = new Scaler(kube, { namespace: 'ns', name: 'set', minRunners, maxRunners, logger });
  const books = new JobBookkeeping(kube, { namespace: 'ns', logger, clock, ...bookkeeping });
  const metrics = new ListenerMetrics(registry);
  const loop = new PollLoop({
    scaleSetId: 1,
    scaleSetName: 'set',
    maxRunners,
    api: actions,
    session,
    scaling: new EphemeralRunnerSetScaling({
      scaler,
      bookkeeping: books,
      gha: new GhaMetrics({
        registry,
        logger,
        scaleSet: { name: 'set', namespace: 'ns', enterprise: '', organization: 'octo', repository: '' },
      }),
      metrics,
      clock,
    }),
    metrics,
    clock,
    logger,
    backoff: defaultBackoffPolicies,
    random: () => 0,
  });
  const abort = new AbortController();
  books.start();
  const running = loop.run(abort.signal);
  const until = async (cond: () => boolean, what: string): Promise<void> => {
    for (let i = 0; i < 200 && !cond(); i++) await clock.advance(1);
    if (!cond()) throw new Error(`never happened: ${what}`);
  };
  const stop = async () => {
    abort.abort(new Error('test over'));
    await running;
    await books.stop(0);
  };
  return { clock, actions, kube, loop, session, until, stop, registry };
}

describe('PollLoop', () => {
  it('acknowledges each message once and hands lastMessageId to the next poll', async () => {
    const t = setup();
    await t.until(() => t.actions.polls.length === 1, 'first poll');
    expect(t.actions.polls[0].lastMessageId).toBe(0);
    expect(t.actions.polls[0].maxCapacity).toBe(10);
    t.actions.push(message(7, stats(0), []));
    await t.until(() => t.actions.polls.length === 2, 'second poll');
    expect(t.actions.polls[1].lastMessageId).toBe(7);
    // The service delivers 7 again (its DELETE got lost): acknowledged, not handled again.
    t.actions.push(message(7, stats(0), [job('JobStarted', 1, { runnerName: 'r1' })]));
    t.actions.push(message(8, stats(0), []));
    await t.until(() => t.actions.polls.length === 4, 'fourth poll');
    expect(t.actions.deleted).toEqual([7, 7, 8]);
    expect(t.kube.statuses.has('r1')).toBe(false);
    expect(t.actions.polls[3].lastMessageId).toBe(8);
    await t.stop();
  });

  it('acquires no more than maxRunners minus the jobs already assigned, oldest first', async () => {
    const t = setup(3);
    await t.until(() => t.actions.polls.length === 1, 'first poll');
    t.actions.push(
      message(
        1,
        stats(1, 1),
        [5, 2, 9, 4].map((id) => job('JobAvailable', id)),
      ),
    );
    await t.until(() => t.actions.acquireCalls.length === 1, 'an acquire');
    expect(t.actions.acquireCalls[0]).toEqual([2, 4]);
    // At capacity: the next offer is not acquired at all (upstream would, even at maxRunners 0).
    t.actions.push(message(2, stats(3, 1), [job('JobAvailable', 11)]));
    await t.until(() => t.actions.polls.length === 3, 'third poll');
    expect(t.actions.acquireCalls).toHaveLength(1);
    await t.stop();
  });

  it('scales to assigned + min on each message and on idle polls', async () => {
    const t = setup(10, 2);
    await t.until(() => t.kube.spec.replicas === 2, 'scaled to the session statistics');
    t.actions.push(message(1, stats(4), []));
    await t.until(() => t.kube.spec.replicas === 6, 'scaled to 4 + 2');
    t.actions.push(message(2, stats(20), []));
    await t.until(() => t.kube.spec.replicas === 10, 'capped at maxRunners');
    await t.stop();
  });

  it('patches the scale before a burst of job bookkeeping is written', async () => {
    // One status patch per minute of the fake clock, which the test does not advance that far.
    const t = setup(200, 0, { qps: 1 / 60, burst: 1 });
    await t.until(() => t.actions.polls.length === 1, 'first poll');
    t.kube.writes = [];
    const started = Array.from({ length: 100 }, (_, i) =>
      job('JobStarted', i + 1, { runnerName: `r${i + 1}` }),
    );
    t.actions.push(message(1, stats(100), started));
    await t.until(() => t.kube.spec.replicas === 100, 'the scale patch');
    // The scale patch went out with at most the bucket's one burst token of bookkeeping before it.
    expect(t.kube.writes.indexOf('ers replicas=100')).toBeLessThanOrEqual(1);
    expect(t.kube.statuses.size).toBeLessThanOrEqual(1);
    await t.stop();
  });

  it('refreshes the session on a 401 from the queue and polls on with the new token', async () => {
    const t = setup();
    await t.until(() => t.actions.polls.length === 1, 'first poll');
    t.actions.token = 'rotated-by-service';
    t.actions.push(message(1, stats(0), []));
    await t.until(() => t.actions.deleted.includes(1), 'the message handled after refresh');
    const tokens = t.actions.polls.map((p) => p.token);
    expect(tokens).toContain('rotated-by-service+');
    expect(t.actions.sessions).toBe(1);
    await t.stop();
  });

  it('opens a new session when the poll says the session is gone, keeping lastMessageId', async () => {
    const t = setup();
    await t.until(() => t.actions.polls.length === 1, 'first poll');
    t.actions.push(message(5, stats(0), []));
    await t.until(() => t.actions.polls.length === 2, 'second poll');
    t.actions.failNextPoll = new ActionsError({
      kind: 'NotFound',
      method: 'GET',
      url: 'https://q/messages',
      statusCode: 404,
      detail: 'session not found',
    });
    t.actions.push(message(6, stats(0), []));
    await t.until(() => t.actions.deleted.includes(6), 'the next message handled');
    expect(t.actions.sessions).toBe(2);
    const afterGone = t.actions.polls.slice(2);
    expect(afterGone.every((p) => p.lastMessageId >= 5)).toBe(true);
    await t.stop();
  });
});
