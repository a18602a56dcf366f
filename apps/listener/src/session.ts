import { isActionsError } from '@aro/actions/lean';
import type { RunnerScaleSetSession } from '@aro/actions/lean';
import { Clock, sleep } from '@aro/kube/lean';
import type { Logger } from '@aro/observability/lean';
import { Backoff, BackoffPolicies, classifyFailure } from './failures';

/** The session calls of the Actions client (ActionsServiceClient satisfies it). */
export interface SessionApi {
  createMessageSession(
    scaleSetId: number,
    owner: string,
    opts?: { signal?: AbortSignal },
  ): Promise<RunnerScaleSetSession>;
  refreshMessageSession(
    scaleSetId: number,
    sessionId: string,
    opts?: { signal?: AbortSignal },
  ): Promise<RunnerScaleSetSession>;
  deleteMessageSession(scaleSetId: number, sessionId: string, opts?: { signal?: AbortSignal }): Promise<void>;
}

export type SessionState = 'closed' | 'opening' | 'open' | 'closing';

export interface MessageSessionOptions {
  scaleSetId: number;
  scaleSetName: string;
  /** The session's owner name on the service: the pod name. */
  owner: string;
  clock: Clock;
  logger: Logger;
  backoff: BackoffPolicies;
  /** Refresh the queue token this long before its expiry (when the token tells its expiry). */
  refreshMarginMs?: number;
  onStateChange?: (state: SessionState) => void;
  onCreateAttempt?: (result: 'created' | 'conflict' | 'failed') => void;
  /**
   * The service answered 404 to the session create: it no longer has the scale set (it deletes scale
   * sets that stay offline). Called on each such answer; the listener tells the controller, which can
   * create the scale set again at once.
   */
  onScaleSetMissing?: () => void;
  random?: () => number;
}

/** The `exp` of a queue token that is a JWT, in ms; undefined for an opaque token. */
export function queueTokenExpiryMs(token: string): number | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) as { exp?: unknown };
    return typeof claims.exp === 'number' && Number.isFinite(claims.exp) ? claims.exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The listener's message session with the Actions service, as a small state machine:
 *
 *   closed --open()--> opening --created--> open --close()--> closing --> closed
 *                         ^  409: wait (backoff) and try again, never give up (never a crash loop)
 *   open --refresh()--> open (new queue token)
 *   open --refresh() answers 404 / "session expired"--> opening (a new session; the caller keeps its
 *        last message id, so nothing already processed is handled again)
 *
 * The queue token is refreshed before it expires when it says when (a JWT `exp`), and on any 401 from
 * the queue in any case. Time comes from `clock`, so the unit tests step it by hand.
 */
export class MessageSession {
  private current: RunnerScaleSetSession | undefined;
  private stateValue: SessionState = 'closed';
  private refreshAtMs: number | undefined;
  private readonly backoff: Backoff;

  constructor(
    private readonly api: SessionApi,
    private readonly o: MessageSessionOptions,
  ) {
    this.backoff = new Backoff(o.backoff, o.random);
  }

  get state(): SessionState {
    return this.stateValue;
  }

  /** The open session; throws when there is none (the loop opens one first). */
  get session(): RunnerScaleSetSession {
    if (!this.current || this.stateValue !== 'open') throw new Error('the message session is not open');
    return this.current;
  }

  get sessionId(): string | undefined {
    return this.current?.sessionId;
  }

  /** The open session's message queue; throws when there is none. */
  get queueUrl(): string {
    return this.session.messageQueueUrl;
  }

  /** The open session's queue token, as of the last create or refresh; throws when there is none. */
  get queueToken(): string {
    return this.session.messageQueueAccessToken;
  }

  /**
   * Creates the session, waiting out conflicts and failures with backoff until it succeeds or `signal`
   * aborts (then it rejects with the abort reason). Resolves with the new session.
   */
  async open(signal: AbortSignal): Promise<RunnerScaleSetSession> {
    this.setState('opening');
    this.backoff.reset();
    for (;;) {
      signal.throwIfAborted();
      try {
        const created = await this.api.createMessageSession(this.o.scaleSetId, this.o.owner, { signal });
        this.o.onCreateAttempt?.('created');
        this.adopt(created);
        this.setState('open');
        this.o.logger.info('Opened the message session', {
          sessionId: created.sessionId,
          owner: this.o.owner,
          attempts: this.backoff.consecutiveFailures + 1,
        });
        this.backoff.reset();
        return created;
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        const kind = classifyFailure(err);
        this.o.onCreateAttempt?.(kind === 'conflict' ? 'conflict' : 'failed');
        if (isActionsError(err) && err.statusCode === 404) this.o.onScaleSetMissing?.();
        const waitMs = this.backoff.next(kind);
        const fields = {
          scaleSet: this.o.scaleSetName,
          scaleSetId: this.o.scaleSetId,
          failure: kind,
          attempt: this.backoff.consecutiveFailures,
          retryInMs: waitMs,
          error: err instanceof Error ? err.message : String(err),
        };
        if (kind === 'conflict') {
          this.o.logger.warn(
            'The scale set already has an active session (an earlier listener that did not shut down cleanly, or another cluster); waiting for it to expire',
            fields,
          );
        } else if (kind === 'unauthorized') {
          this.o.logger.error(
            'The Actions service refused the credentials; check the GitHub config secret',
            undefined,
            fields,
          );
        } else {
          this.o.logger.warn('Creating the message session failed; retrying', fields);
        }
        await sleep(this.o.clock, waitMs, signal);
      }
    }
  }

  /** Whether the queue token is due for a refresh (it expires within the margin). */
  refreshDue(): boolean {
    return this.refreshAtMs !== undefined && this.o.clock.now() >= this.refreshAtMs;
  }

  /**
   * Rotates the queue token. If the service no longer knows the session (404, "session expired"), a new
   * one is opened in its place; other failures reject (the loop backs off and tries again).
   */
  async refresh(signal: AbortSignal): Promise<RunnerScaleSetSession> {
    const old = this.session;
    try {
      const refreshed = await this.api.refreshMessageSession(this.o.scaleSetId, old.sessionId, { signal });
      this.adopt(refreshed);
      this.o.logger.debug('Refreshed the message queue token', { sessionId: refreshed.sessionId });
      return refreshed;
    } catch (err) {
      if (signal.aborted || classifyFailure(err) !== 'session-gone') throw err;
      return this.reopen(signal, err);
    }
  }

  /**
   * Replaces a session the service no longer knows (404 or "session expired" on a refresh or a poll) by
   * a new one. The caller keeps its last message id, so what it already processed is not handled again.
   */
  async reopen(signal: AbortSignal, cause: unknown): Promise<RunnerScaleSetSession> {
    const old = this.current;
    this.o.logger.warn('The service no longer knows the message session; opening a new one', {
      scaleSet: this.o.scaleSetName,
      sessionId: old?.sessionId,
      error: cause instanceof Error ? cause.message : String(cause),
    });
    if (old) {
      // Best effort: if the service still holds it after all, the create would meet it as a conflict.
      await this.api
        .deleteMessageSession(this.o.scaleSetId, old.sessionId, { signal })
        .catch(() => undefined);
    }
    this.current = undefined;
    return this.open(signal);
  }

  /** Deletes the session on the service (within the caller's deadline); errors are logged, not thrown. */
  async close(signal: AbortSignal): Promise<void> {
    const s = this.current;
    this.setState('closing');
    try {
      if (s) {
        await this.api.deleteMessageSession(this.o.scaleSetId, s.sessionId, { signal });
        this.o.logger.info('Deleted the message session', { sessionId: s.sessionId });
      }
    } catch (err) {
      this.o.logger.warn('Deleting the message session failed; the service lets it expire', {
        scaleSet: this.o.scaleSetName,
        sessionId: s?.sessionId,
        error: err instanceof Error ? err.message : String(err),
      });
    } finally {
      this.current = undefined;
      this.refreshAtMs = undefined;
      this.setState('closed');
    }
  }

  private adopt(s: RunnerScaleSetSession): void {
    this.current = s;
    const expiry = queueTokenExpiryMs(s.messageQueueAccessToken);
    if (expiry === undefined) {
      this.refreshAtMs = undefined;
      return;
    }
    // The token's lifetime is on the wall clock; the refresh is scheduled on the monotonic clock.
    const remainingMs = expiry - this.o.clock.wallTime().getTime();
    const margin = Math.min(this.o.refreshMarginMs ?? 60_000, Math.max(0, remainingMs) / 2);
    this.refreshAtMs = this.o.clock.now() + Math.max(0, remainingMs - margin);
  }

  private setState(state: SessionState): void {
    if (this.stateValue === state) return;
    this.stateValue = state;
    this.o.onStateChange?.(state);
  }
}
