import { ScaleSetCalls } from './scale-set-calls';
import { apiVersion, type CallOptions, malformed, type ParsedResponse, scaleSetsPath } from './service-call';
import {
  type AcquirableJob,
  fromWireScaleSet,
  type RunnerScaleSetMessage,
  type RunnerScaleSetSession,
  type WireRunnerScaleSet,
} from './types';

export type { ActionsClientOptions, CallOptions } from './service-call';

const zeroSessionId = '00000000-0000-0000-0000-000000000000';

/**
 * A client of the Actions service for one config URL and one set of credentials: the scale-set
 * API the controllers use (runner-calls.ts, scale-set-calls.ts), and here the message-queue API the
 * listener uses. Safe to share: calls run concurrently, and one admin token (refreshed single-flight)
 * serves them all.
 */
export class ActionsServiceClient extends ScaleSetCalls {
  async createMessageSession(
    scaleSetId: number,
    owner: string,
    opts: CallOptions = {},
  ): Promise<RunnerScaleSetSession> {
    // Sent once: a repeat after the first reached the service would meet our own session (SessionConflict).
    const res = await this.write(
      'POST',
      `${scaleSetsPath}/${scaleSetId}/sessions`,
      'POST runnerscalesets/{id}/sessions',
      { sessionId: zeroSessionId, ownerName: owner },
      'once',
      opts,
    );
    return this.session(res);
  }

  async refreshMessageSession(
    scaleSetId: number,
    sessionId: string,
    opts: CallOptions = {},
  ): Promise<RunnerScaleSetSession> {
    // Repeatable: a second refresh only rotates the queue token again; the response carries the newest one.
    const res = await this.write(
      'PATCH',
      `${scaleSetsPath}/${scaleSetId}/sessions/${encodeURIComponent(sessionId)}`,
      'PATCH runnerscalesets/{id}/sessions/{sessionId}',
      undefined,
      'idempotent',
      opts,
    );
    return this.session(res);
  }

  async deleteMessageSession(scaleSetId: number, sessionId: string, opts: CallOptions = {}): Promise<void> {
    await this.remove(
      `${scaleSetsPath}/${scaleSetId}/sessions/${encodeURIComponent(sessionId)}`,
      'DELETE runnerscalesets/{id}/sessions/{sessionId}',
      opts,
    );
  }

  /**
   * Long-polls the session's queue. Undefined when the service had nothing within its window (202).
   * Messages with ids up to `lastMessageId` count as processed; `maxCapacity` tells the service how
   * many runners the scale set can have, so it does not assign more jobs than that.
   * A 401 means the queue token expired or was rotated: ActionsError kind MessageQueueTokenExpired,
   * answered by refreshMessageSession and a new poll.
   */
  async getMessage(
    messageQueueUrl: string,
    queueToken: string,
    lastMessageId: number,
    maxCapacity: number,
    opts: CallOptions = {},
  ): Promise<RunnerScaleSetMessage | undefined> {
    if (!Number.isSafeInteger(maxCapacity) || maxCapacity < 0) {
      throw new Error(`maxCapacity must be a non-negative integer, got ${maxCapacity}`);
    }
    const url = new URL(messageQueueUrl);
    if (lastMessageId > 0) url.searchParams.set('lastMessageId', String(lastMessageId));
    const res = await this.transport.send({
      method: 'GET',
      url,
      route: 'GET message',
      headers: {
        accept: `application/json; api-version=${apiVersion}`,
        authorization: `Bearer ${queueToken}`,
        'x-scalesetmaxcapacity': String(maxCapacity),
      },
      repeat: 'idempotent',
      timeoutMs: this.longPollTimeoutMs,
      signal: opts.signal,
    });
    if (res.status === 202) return undefined;
    const parsed = this.parse(res, url, 'GET', [200], true);
    return parsed.json as RunnerScaleSetMessage;
  }

  /** Acknowledges a message, so the service stops redelivering it. */
  async deleteMessage(
    messageQueueUrl: string,
    queueToken: string,
    messageId: number,
    opts: CallOptions = {},
  ): Promise<void> {
    const url = new URL(messageQueueUrl);
    url.pathname = `${url.pathname.replace(/\/+$/, '')}/${messageId}`;
    const res = await this.transport.send({
      method: 'DELETE',
      url,
      route: 'DELETE message/{id}',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${queueToken}` },
      repeat: 'idempotent',
      signal: opts.signal,
    });
    this.parse(res, url, 'DELETE', [204], true);
  }

  /** Old-ARC API: the jobs the scale set could acquire now. */
  async getAcquirableJobs(scaleSetId: number, opts: CallOptions = {}): Promise<AcquirableJob[]> {
    const res = await this.call({
      method: 'GET',
      path: `${scaleSetsPath}/${scaleSetId}/acquirablejobs`,
      route: 'GET runnerscalesets/{id}/acquirablejobs',
      expect: [200, 204],
      repeat: 'idempotent',
      signal: opts.signal,
    });
    return res.status === 204 ? [] : this.list<AcquirableJob>(res);
  }

  /**
   * Claims jobs offered in JobAvailable messages, with the session's queue token. Returns the ids
   * actually acquired, which may be fewer (another scale set took one, or it was cancelled).
   */
  async acquireJobs(
    scaleSetId: number,
    queueToken: string,
    requestIds: number[],
    opts: CallOptions = {},
  ): Promise<number[]> {
    const conn = await this.tokens.get(opts.signal);
    const url = this.serviceUrl(conn.actionsUrl, `${scaleSetsPath}/${scaleSetId}/acquirejobs`);
    const res = await this.transport.send({
      method: 'POST',
      url,
      route: 'POST runnerscalesets/{id}/acquirejobs',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${queueToken}` },
      body: JSON.stringify(requestIds),
      repeat: 'once',
      signal: opts.signal,
    });
    const parsed = this.parse(res, url, 'POST', [200], true);
    return this.list<number>(parsed);
  }

  private session(res: ParsedResponse): RunnerScaleSetSession {
    const s = res.json as (RunnerScaleSetSession & { runnerScaleSet?: WireRunnerScaleSet }) | undefined;
    if (!s || !s.sessionId || !s.messageQueueUrl || !s.messageQueueAccessToken) {
      throw malformed(res, 'session response lacks sessionId, messageQueueUrl or messageQueueAccessToken');
    }
    return { ...s, runnerScaleSet: s.runnerScaleSet && fromWireScaleSet(s.runnerScaleSet) };
  }
}
