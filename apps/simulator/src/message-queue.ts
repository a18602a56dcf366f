/**
 * One session's message queue. Job events are batched into messages of at most 50 job messages
 * (the service's limit); a message stays open for more events until it is first delivered, then it is
 * frozen and redelivered until the listener acknowledges it (by `lastMessageId` or DELETE).
 */

export const MAX_JOB_MESSAGES_PER_MESSAGE = 50;

export interface QueuedMessage {
  id: number;
  items: Array<Record<string, unknown>>;
  delivered: boolean;
}

type Waiter = () => void;

export class MessageQueue {
  private readonly messages: QueuedMessage[] = [];
  private readonly waiters = new Set<Waiter>();
  private acknowledged = 0;

  constructor(private readonly nextMessageId: () => number) {}

  push(item: Record<string, unknown>): void {
    const last = this.messages[this.messages.length - 1];
    if (last && !last.delivered && last.items.length < MAX_JOB_MESSAGES_PER_MESSAGE) {
      last.items.push(item);
    } else {
      this.messages.push({ id: this.nextMessageId(), items: [item], delivered: false });
    }
    this.wake();
  }

  /** Everything with id <= `lastMessageId` has been processed by the listener. */
  acknowledgeThrough(lastMessageId: number): void {
    if (lastMessageId > this.acknowledged) this.acknowledged = lastMessageId;
    while (this.messages.length > 0 && this.messages[0].id <= lastMessageId) this.messages.shift();
  }

  /** DELETE of one message; returns false when it was not pending (already acknowledged or never existed). */
  delete(messageId: number): boolean {
    const i = this.messages.findIndex((m) => m.id === messageId);
    if (i < 0) return false;
    this.messages.splice(i, 1);
    if (messageId > this.acknowledged) this.acknowledged = messageId;
    return true;
  }

  /** The oldest unacknowledged message, frozen from here on. */
  take(): QueuedMessage | null {
    const head = this.messages[0];
    if (!head) return null;
    head.delivered = true;
    return head;
  }

  get pending(): number {
    return this.messages.length;
  }

  get acknowledgedId(): number {
    return this.acknowledged;
  }

  /**
   * Resolves true when a message is waiting, false after `timeoutMs` or when `abort` fires (client
   * gone, session deleted, simulator stopping).
   */
  async waitForMessage(timeoutMs: number, abort: AbortSignal): Promise<boolean> {
    if (this.messages.length > 0) return true;
    if (abort.aborted || timeoutMs <= 0) return false;
    return new Promise<boolean>((resolve) => {
      const done = (result: boolean): void => {
        clearTimeout(timer);
        this.waiters.delete(onMessage);
        abort.removeEventListener('abort', onAbort);
        resolve(result);
      };
      const onMessage = (): void => done(true);
      const onAbort = (): void => done(false);
      const timer = setTimeout(() => done(false), timeoutMs);
      this.waiters.add(onMessage);
      abort.addEventListener('abort', onAbort, { once: true });
    });
  }

  get pollers(): number {
    return this.waiters.size;
  }

  private wake(): void {
    for (const w of [...this.waiters]) w();
  }
}
