import { ActionsError, type RunnerScaleSetSession } from '@aro/actions';
import { FakeClock, flushMicrotasks } from '@aro/kube/testing';
import { silentLogger } from '@aro/observability';
import { defaultBackoffPolicies } from './failures';
import { MessageSession, SessionApi, queueTokenExpiryMs } from './session';

function jwt(expSeconds: number): string {
  const b = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${b({ alg: 'none' })}.${b({ exp: expSeconds })}.sig`;
}

function conflict(): ActionsError {
  return new ActionsError({
    kind: 'SessionConflict',
    method: 'POST',
    url: 'https://x/sessions',
    statusCode: 409,
    typeName: 'TaskAgentSessionConflictException',
    detail: 'already has an active session',
  });
}

function expired(): ActionsError {
  return new ActionsError({
    kind: 'SessionGone',
    method: 'PATCH',
    url: 'https://x/sessions/1',
    statusCode: 400,
    typeName: 'GitHub.DistributedTask.WebApi.TaskAgentSessionExpiredException',
    detail: 'session expired',
  });
}

/** A service with one session slot, scripted failures, and a record of what it was asked. */
class FakeService implements SessionApi {
  live: string | undefined;
  created = 0;
  deleted: string[] = [];
  refreshed = 0;
  conflictsLeft = 0;
  refreshFailure: (() => Error) | undefined;
  tokenFor: (n: number) => string = (n) => `opaque-${n}`;

  createMessageSession(): Promise<RunnerScaleSetSession> {
    if (this.conflictsLeft > 0) {
      this.conflictsLeft--;
      return Promise.reject(conflict());
    }
    this.created++;
    this.live = `s${this.created}`;
    return Promise.resolve(this.session());
  }

  refreshMessageSession(_id: number, sessionId: string): Promise<RunnerScaleSetSession> {
    const failure = this.refreshFailure;
    if (failure) return Promise.reject(failure());
    if (sessionId !== this.live) return Promise.reject(expired());
    this.refreshed++;
    return Promise.resolve(this.session());
  }

  deleteMessageSession(_id: number, sessionId: string): Promise<void> {
    this.deleted.push(sessionId);
    if (this.live === sessionId) this.live = undefined;
    return Promise.resolve();
  }

  private session(): RunnerScaleSetSession {
    return {
      sessionId: this.live ?? '',
      ownerName: 'pod',
      messageQueueUrl: `https://q/${this.live}`,
      messageQueueAccessToken: this.tokenFor(this.created + this.refreshed),
      statistics: undefined,
    };
  }
}

function session(service: FakeService, clock: FakeClock) {
  return new MessageSession(service, {
    scaleSetId: 1,
    scaleSetName: 'set',
    owner: 'pod',
    clock,
    logger: silentLogger,
    backoff: defaultBackoffPolicies,
    random: () => 0,
  });
}

describe('MessageSession', () => {
  it('waits out "already has an active session" with growing backoff instead of failing', async () => {
    const clock = new FakeClock();
    const service = new FakeService();
    service.conflictsLeft = 3;
    const s = session(service, clock);
    let opened = false;
    void s.open(new AbortController().signal).then(() => (opened = true));
    await flushMicrotasks();
    expect(s.state).toBe('opening');
    // Backoff for conflicts: 5 s, 10 s, 20 s.
    await clock.advance(4_999);
    expect(service.conflictsLeft).toBe(2);
    await clock.advance(1);
    expect(service.conflictsLeft).toBe(1);
    await clock.advance(10_000);
    expect(service.conflictsLeft).toBe(0);
    expect(opened).toBe(false);
    await clock.advance(20_000);
    expect(opened).toBe(true);
    expect(s.state).toBe('open');
    expect(service.created).toBe(1);
  });

  it('stops waiting when shut down while the conflict lasts', async () => {
    const clock = new FakeClock();
    const service = new FakeService();
    service.conflictsLeft = 1000;
    const s = session(service, clock);
    const abort = new AbortController();
    const opening = s.open(abort.signal);
    await clock.advance(60_000);
    abort.abort(new Error('shutdown'));
    await expect(opening).rejects.toThrow('shutdown');
  });

  it('refreshes a JWT queue token before it expires, and not before it is due', async () => {
    const clock = new FakeClock(0, Date.UTC(2026, 0, 1));
    const service = new FakeService();
    const nowS = Date.UTC(2026, 0, 1) / 1000;
    service.tokenFor = () => jwt(nowS + 600 + Math.floor(clock.now() / 1000));
    const s = session(service, clock);
    await s.open(new AbortController().signal);
    expect(s.refreshDue()).toBe(false);
    await clock.advance(539_000);
    expect(s.refreshDue()).toBe(false);
    // One minute before the 10-minute token expires.
    await clock.advance(1_000);
    expect(s.refreshDue()).toBe(true);
    await s.refresh(new AbortController().signal);
    expect(service.refreshed).toBe(1);
    expect(s.refreshDue()).toBe(false);
  });

  it('leaves an opaque queue token to the 401 path (no expiry to schedule)', async () => {
    const clock = new FakeClock();
    const s = session(new FakeService(), clock);
    await s.open(new AbortController().signal);
    await clock.advance(24 * 3600_000);
    expect(s.refreshDue()).toBe(false);
    expect(queueTokenExpiryMs('opaque')).toBeUndefined();
  });

  it('replaces a session the service forgot (session expired on refresh) by a new one', async () => {
    const clock = new FakeClock();
    const service = new FakeService();
    const s = session(service, clock);
    await s.open(new AbortController().signal);
    expect(s.sessionId).toBe('s1');
    service.live = undefined; // the service dropped it
    const replaced = await s.refresh(new AbortController().signal);
    expect(replaced.sessionId).toBe('s2');
    expect(s.state).toBe('open');
    expect(service.deleted).toEqual(['s1']);
  });

  it('replaces the session on a 404 from the refresh too, but not on other failures', async () => {
    const clock = new FakeClock();
    const service = new FakeService();
    const s = session(service, clock);
    await s.open(new AbortController().signal);
    service.refreshFailure = () =>
      new ActionsError({ kind: 'Other', method: 'PATCH', url: 'u', statusCode: 503, detail: 'unavailable' });
    await expect(s.refresh(new AbortController().signal)).rejects.toThrow('unavailable');
    expect(s.sessionId).toBe('s1');
    service.refreshFailure = () =>
      new ActionsError({ kind: 'NotFound', method: 'PATCH', url: 'u', statusCode: 404, detail: 'not found' });
    const p = s.refresh(new AbortController().signal);
    service.refreshFailure = undefined;
    await expect(p).resolves.toMatchObject({ sessionId: 's2' });
  });

  it('deletes the session on close', async () => {
    const service = new FakeService();
    const s = session(service, new FakeClock());
    await s.open(new AbortController().signal);
    await s.close(new AbortController().signal);
    expect(service.deleted).toEqual(['s1']);
    expect(service.live).toBeUndefined();
    expect(s.state).toBe('closed');
  });

  it('says the scale set is missing when the session create answers 404, and keeps trying', async () => {
    const clock = new FakeClock();
    const service = new FakeService();
    let gone = 1;
    service.createMessageSession = () =>
      gone-- > 0
        ? Promise.reject(
            new ActionsError({
              kind: 'NotFound',
              method: 'POST',
              url: 'https://x/runnerscalesets/1/sessions',
              statusCode: 404,
              detail: 'runner scale set 1 not found',
            }),
          )
        : FakeService.prototype.createMessageSession.call(service);
    const reports: string[] = [];
    const s = new MessageSession(service, {
      scaleSetId: 1,
      scaleSetName: 'set',
      owner: 'pod',
      clock,
      logger: silentLogger,
      backoff: defaultBackoffPolicies,
      random: () => 0,
      onScaleSetMissing: () => reports.push('missing'),
    });
    void s.open(new AbortController().signal);
    await flushMicrotasks();
    expect(reports).toEqual(['missing']);
    await clock.advance(60_000);
    await flushMicrotasks();
    expect(s.state).toBe('open');
  });
});
