import type { CoreV1Event } from '@kubernetes/client-node';
import { EventKind, KubeApi, KubeObject, isNotFound } from '@aro/kube';
import type { Logger } from '@aro/observability';

export type EventType = 'Normal' | 'Warning';

export interface EventRecorderOptions {
  /** Repeats within this long of the last one are folded into its Event. client-go's is 10 minutes. */
  aggregationWindowMs?: number;
  /** Distinct Events remembered for folding; the least recently used is forgotten first. */
  maxRemembered?: number;
  now?: () => number;
}

/** One Event object and what its next write must say. */
interface SeriesEntry {
  /** The Event's name once created; undefined until the create answered. */
  name?: string;
  namespace: string;
  count: number;
  /** The count the API server holds; a queued write with nothing newer to say is skipped. */
  written: number;
  firstTimestamp: string;
  lastTimestamp: string;
  lastSeenMs: number;
  /** The writes of one series are made in order, each carrying the count at the time it runs. */
  writes: Promise<void>;
}

const DEFAULT_WINDOW_MS = 10 * 60_000;
const DEFAULT_MAX_REMEMBERED = 4096;

/**
 * Records Kubernetes Events on the objects the controllers manage, so `kubectl describe` tells a user
 * what happened to their runner and what they must fix, without reading the controller's logs.
 *
 * A repeat of an Event (same object, type, reason and message) within the aggregation window is not
 * a new Event object: the first one's `count` and `lastTimestamp` are patched, as client-go's event
 * correlator does. A failure retried every few seconds would otherwise write one object per retry
 * (a dozen RegistrationFailed Events a minute per runner, each kept an hour by the API server), and
 * `kubectl describe` would show a screenful of the same line instead of one line with a count.
 *
 * Recording never fails a reconcile and never holds one up: the writes are not awaited, and a
 * failure is logged at debug level. An Event is a convenience, the status is the record.
 */
export class EventRecorder {
  private readonly series = new Map<string, SeriesEntry>();
  private readonly windowMs: number;
  private readonly maxRemembered: number;
  private readonly now: () => number;

  constructor(
    private readonly client: KubeApi,
    private readonly component: string,
    private readonly logger: Logger,
    /** `failures` records only Warning events: what a user must act on. */
    private readonly mode: 'all' | 'failures' = 'all',
    options: EventRecorderOptions = {},
  ) {
    this.windowMs = options.aggregationWindowMs ?? DEFAULT_WINDOW_MS;
    this.maxRemembered = options.maxRemembered ?? DEFAULT_MAX_REMEMBERED;
    this.now = options.now ?? Date.now;
  }

  record(object: KubeObject, type: EventType, reason: string, message: string): void {
    if (this.mode === 'failures' && type !== 'Warning') return;
    const meta = object.metadata ?? {};
    const text = message.length > 1024 ? `${message.slice(0, 1021)}...` : message;
    const nowMs = this.now();
    const now = new Date(nowMs).toISOString();
    const key = JSON.stringify([meta.namespace, object.kind, meta.name, meta.uid, type, reason, text]);

    let entry = this.series.get(key);
    if (entry && nowMs - entry.lastSeenMs > this.windowMs) entry = undefined;
    if (entry) {
      entry.count++;
      entry.lastTimestamp = now;
      entry.lastSeenMs = nowMs;
      // Most recently used last: the Map's order is the eviction order.
      this.series.delete(key);
      this.series.set(key, entry);
    } else {
      entry = {
        namespace: meta.namespace ?? '',
        count: 1,
        written: 0,
        firstTimestamp: now,
        lastTimestamp: now,
        lastSeenMs: nowMs,
        writes: Promise.resolve(),
      };
      this.series.delete(key);
      this.series.set(key, entry);
      while (this.series.size > this.maxRemembered) {
        this.series.delete(this.series.keys().next().value as string);
      }
    }
    const series = entry;
    const event = (): CoreV1Event =>
      ({
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { generateName: `${meta.name}.`, namespace: meta.namespace },
        involvedObject: {
          apiVersion: object.apiVersion,
          kind: object.kind,
          name: meta.name,
          namespace: meta.namespace,
          uid: meta.uid,
        },
        type,
        reason,
        message: text,
        source: { component: this.component },
        reportingComponent: this.component,
        reportingInstance: process.env.POD_NAME ?? this.component,
        firstTimestamp: series.firstTimestamp,
        lastTimestamp: series.lastTimestamp,
        count: series.count,
      }) as unknown as CoreV1Event;

    series.writes = series.writes
      .then(() => this.write(series, event))
      .catch((err: unknown) => {
        this.logger.debug('Failed to record an event', {
          namespace: meta.namespace,
          name: meta.name,
          reason,
          err: err instanceof Error ? err.message : String(err),
        });
      });
  }

  /** Resolves once every write recorded so far has been made (or has failed and been logged). */
  async settled(): Promise<void> {
    await Promise.all([...this.series.values()].map((s) => s.writes));
  }

  /** Creates the series' Event, or brings the existing one up to the series' count. */
  private async write(series: SeriesEntry, event: () => CoreV1Event): Promise<void> {
    if (series.name !== undefined) {
      if (series.written === series.count) return;
      const count = series.count;
      try {
        await this.client.mergePatch(EventKind, series.namespace, series.name, {
          count,
          lastTimestamp: series.lastTimestamp,
        });
        series.written = count;
        return;
      } catch (err) {
        // The API server expired it (an hour by default): start a new one with the count so far.
        if (!isNotFound(err)) throw err;
        series.name = undefined;
      }
    }
    const body = event();
    const created = await this.client.create<CoreV1Event>(EventKind, body);
    series.name = created.metadata?.name;
    series.written = body.count ?? 0;
  }
}
