import type { CoreV1Event, V1ConfigMap } from '@kubernetes/client-node';
import { EventRecorder } from '@aro/controllers';
import { EventKind, KubeClient } from '@aro/kube';
import { createTestNamespace, testKubeConfig, waitFor } from '../../harness';
import { testLogger } from './fixture';

const ConfigMapKind = { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };

describe('EventRecorder on the API server', () => {
  const kube = new KubeClient(testKubeConfig());
  afterAll(() => kube.close());

  async function involvedObject(namespace: string): Promise<V1ConfigMap> {
    const created = await kube.create<V1ConfigMap>(ConfigMapKind, {
      metadata: { name: 'involved', namespace },
      data: {},
    });
    return { ...created, apiVersion: 'v1', kind: 'ConfigMap' };
  }

  const eventsOf = async (namespace: string) =>
    (await kube.list<CoreV1Event>(EventKind, { namespace })).filter(
      (e) => e.involvedObject?.name === 'involved',
    );

  it('folds N repeats of one Event into one Event object with count N and the last timestamp', async () => {
    const namespace = await createTestNamespace('events');
    const object = await involvedObject(namespace);
    let clock = Date.parse('2026-01-01T00:00:00Z');
    const recorder = new EventRecorder(kube, 'aro-test', testLogger(), 'all', { now: () => clock });
    const repeats = 12;
    for (let i = 0; i < repeats; i++) {
      recorder.record(object, 'Warning', 'RegistrationFailed', 'the credentials secret is missing');
      clock += 1_000;
    }
    const [event] = await waitFor(
      async () => {
        const events = await eventsOf(namespace);
        return events.length === 1 && events[0].count === repeats ? events : undefined;
      },
      { description: `one Event with count ${repeats}` },
    );
    expect(new Date(event.firstTimestamp!).toISOString()).toBe('2026-01-01T00:00:00.000Z');
    expect(new Date(event.lastTimestamp!).toISOString()).toBe('2026-01-01T00:00:11.000Z');
    expect(event).toMatchObject({ type: 'Warning', reason: 'RegistrationFailed' });
  });

  it('keeps another message, and a repeat after the window, as Events of their own', async () => {
    const namespace = await createTestNamespace('events');
    const object = await involvedObject(namespace);
    let clock = Date.now();
    const recorder = new EventRecorder(kube, 'aro-test', testLogger(), 'all', {
      now: () => clock,
      aggregationWindowMs: 60_000,
    });
    recorder.record(object, 'Warning', 'QuotaExceeded', 'exceeded quota: retrying in 30s');
    recorder.record(object, 'Warning', 'QuotaExceeded', 'exceeded quota: retrying in 30s');
    recorder.record(object, 'Warning', 'InvalidPod', 'the pod is invalid');
    clock += 61_000;
    recorder.record(object, 'Warning', 'QuotaExceeded', 'exceeded quota: retrying in 30s');
    const events = await waitFor(
      async () => {
        const all = await eventsOf(namespace);
        return all.length === 3 && all.some((e) => e.count === 2) ? all : undefined;
      },
      { description: 'three Events: a series of two, another reason, and a new series' },
    );
    expect(events.map((e) => `${e.reason} ${e.count}`).sort()).toEqual([
      'InvalidPod 1',
      'QuotaExceeded 1',
      'QuotaExceeded 2',
    ]);
  });
});
