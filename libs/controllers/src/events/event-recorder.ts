import type { CoreV1Event } from '@kubernetes/client-node';
import { EventKind, KubeClient, KubeObject } from '@aro/kube';
import type { Logger } from '@aro/observability';

export type EventType = 'Normal' | 'Warning';

/**
 * Records Kubernetes Events on the objects the controllers manage, so `kubectl describe` tells a user
 * what happened to their runner and what they must fix, without reading the controller's logs.
 *
 * Recording never fails a reconcile and never holds one up: the write is not awaited, and a failure
 * is logged at debug level. An Event is a convenience, the status is the record.
 */
export class EventRecorder {
  constructor(
    private readonly client: KubeClient,
    private readonly component: string,
    private readonly logger: Logger,
    /** `failures` records only Warning events: what a user must act on. */
    private readonly mode: 'all' | 'failures' = 'all',
  ) {}

  record(object: KubeObject, type: EventType, reason: string, message: string): void {
    if (this.mode === 'failures' && type !== 'Warning') return;
    const meta = object.metadata ?? {};
    const now = new Date().toISOString();
    const event = {
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
      message: message.length > 1024 ? `${message.slice(0, 1021)}...` : message,
      source: { component: this.component },
      reportingComponent: this.component,
      reportingInstance: process.env.POD_NAME ?? this.component,
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    } as unknown as CoreV1Event;
    this.client.create(EventKind, event).catch((err: unknown) => {
      this.logger.debug('Failed to record an event', {
        namespace: meta.namespace,
        name: meta.name,
        reason,
        err: err instanceof Error ? err.message : String(err),
      });
    });
  }
}
