import { randomBytes, randomUUID } from 'node:crypto';
import { vssError } from '../errors';
import { MessageQueue } from '../message-queue';
import type { SessionView } from '../types';
import type { Jobs } from './jobs';
import type { Session } from './model';
import type { ActionsStore } from './store';

/**
 * Message sessions: one listener per scale set at a time, its queue token, and the long poll that
 * hands it the scale set's messages. An idle session is taken over by a new listener; a live one
 * refuses it (409), as the real service does.
 */
export class Sessions {
  constructor(
    private readonly store: ActionsStore,
    private readonly jobs: Jobs,
  ) {}

  private isLive(s: Session): boolean {
    if (s.queue.pollers > 0) return true;
    const idle = this.store.timing.sessionIdleTimeoutMs;
    return idle <= 0 || this.store.now() - s.lastActivity < idle;
  }

  private json(s: Session): Record<string, unknown> {
    const ss = this.store.scaleSets.get(s.scaleSetId);
    return {
      sessionId: s.id,
      ownerName: s.ownerName,
      runnerScaleSet: ss ? this.store.scaleSetJson(ss) : null,
      messageQueueUrl: this.queueUrl(s),
      messageQueueAccessToken: s.queueToken,
      statistics: this.store.statistics(s.scaleSetId),
    };
  }

  private queueUrl(s: Session): string {
    return `${this.store.scaleSetUrl(s.tenantId, s.scaleSetId)}/messages?sessionId=${s.id}`;
  }

  create(tenantId: string, scaleSetId: number, body: Record<string, unknown>): Record<string, unknown> {
    const ss = this.store.scaleSetIn(tenantId, scaleSetId);
    const ownerName = typeof body.ownerName === 'string' ? body.ownerName : '';
    for (const other of [...this.store.sessions.values()]) {
      if (other.scaleSetId !== ss.id) continue;
      if (this.isLive(other)) {
        throw vssError(
          409,
          'TaskAgentSessionConflictException',
          `The scale set ${ss.name} already has an active session for owner ${other.ownerName}.`,
        );
      }
      this.store.log.info('Taking over an idle message session', { scaleSetId: ss.id, sessionId: other.id });
      this.close(other);
    }
    const session: Session = {
      id: randomUUID(),
      tenantId,
      scaleSetId: ss.id,
      ownerName,
      queueToken: '',
      queueTokenExpiresAt: 0,
      lastActivity: this.store.now(),
      queue: new MessageQueue(() => this.store.nextMessageId++),
      closed: new AbortController(),
    };
    this.rotateQueueToken(session);
    this.store.sessions.set(session.id, session);
    this.store.log.info('Created message session', {
      tenantId,
      scaleSetId: ss.id,
      sessionId: session.id,
      ownerName,
    });
    // Jobs that were offered while no listener was connected are offered again to the new one.
    for (const job of this.store.jobs.values()) {
      if (job.scaleSetId === ss.id && job.state === 'available') this.jobs.offer(job);
    }
    this.jobs.dispatchQueuedJobs();
    return this.json(session);
  }

  private rotateQueueToken(s: Session): void {
    s.queueToken = randomBytes(24).toString('base64url');
    s.queueTokenExpiresAt = this.store.now() + this.store.lifetimes.queueTokenSeconds * 1000;
  }

  private sessionIn(tenantId: string, scaleSetId: number, sessionId: string): Session {
    const s = this.store.sessions.get(sessionId);
    if (!s || s.tenantId !== tenantId || s.scaleSetId !== scaleSetId) {
      throw vssError(
        400,
        'TaskAgentSessionExpiredException',
        `The session ${sessionId} has expired or was deleted.`,
      );
    }
    return s;
  }

  refresh(tenantId: string, scaleSetId: number, sessionId: string): Record<string, unknown> {
    const s = this.sessionIn(tenantId, scaleSetId, sessionId);
    this.rotateQueueToken(s);
    s.lastActivity = this.store.now();
    return this.json(s);
  }

  delete(tenantId: string, scaleSetId: number, sessionId: string): void {
    this.close(this.sessionIn(tenantId, scaleSetId, sessionId));
  }

  close(s: Session): void {
    this.store.sessions.delete(s.id);
    s.closed.abort();
    this.store.log.info('Closed message session', { scaleSetId: s.scaleSetId, sessionId: s.id });
  }

  /** The session a queue token opens for this scale set; 401 when unknown, rotated, or expired. */
  authenticateQueue(tenantId: string, scaleSetId: number, token: string | null): Session {
    if (token) {
      for (const s of this.store.sessions.values()) {
        if (s.queueToken !== token) continue;
        if (
          s.tenantId === tenantId &&
          s.scaleSetId === scaleSetId &&
          s.queueTokenExpiresAt > this.store.now()
        )
          return s;
        break;
      }
    }
    throw vssError(
      401,
      'VssUnauthorizedException',
      'The message queue access token is not valid or has expired.',
    );
  }

  /**
   * Long poll: acknowledge through `lastMessageId`, then answer the oldest pending message, or wait
   * for one until the poll timeout (null = 202).
   */
  async getMessage(
    session: Session,
    lastMessageId: number,
    maxCapacity: number | null,
    abort: AbortSignal,
  ): Promise<Record<string, unknown> | null> {
    session.lastActivity = this.store.now();
    if (maxCapacity !== null) {
      const ss = this.store.scaleSets.get(session.scaleSetId);
      if (ss) ss.maxCapacity = maxCapacity;
    }
    if (lastMessageId > 0) session.queue.acknowledgeThrough(lastMessageId);
    const signal = AbortSignal.any([abort, session.closed.signal]);
    const hasMessage = await session.queue.waitForMessage(this.store.timing.longPollTimeoutMs, signal);
    session.lastActivity = this.store.now();
    if (!hasMessage || session.closed.signal.aborted) return null;
    const message = session.queue.take();
    if (!message) return null;
    return {
      messageId: message.id,
      messageType: 'RunnerScaleSetJobMessages',
      body: JSON.stringify(message.items),
      statistics: this.store.statistics(session.scaleSetId),
    };
  }

  deleteMessage(session: Session, messageId: number): void {
    session.lastActivity = this.store.now();
    session.queue.delete(messageId);
  }

  /** Makes every queue token invalid (the next poll answers 401 until the session is refreshed). */
  expireQueueTokens(): void {
    for (const s of this.store.sessions.values()) s.queueTokenExpiresAt = 0;
  }

  /** Ends every open long poll (simulator stop). */
  closeAllPolls(): void {
    for (const s of this.store.sessions.values()) s.closed.abort();
  }

  views(): SessionView[] {
    return [...this.store.sessions.values()].map((s) => ({
      sessionId: s.id,
      ownerName: s.ownerName,
      tenantId: s.tenantId,
      scaleSetId: s.scaleSetId,
      messageQueueUrl: this.queueUrl(s),
      acknowledgedMessageId: s.queue.acknowledgedId,
      pendingMessages: s.queue.pending,
      maxCapacity: this.store.scaleSets.get(s.scaleSetId)?.maxCapacity ?? null,
    }));
  }
}
