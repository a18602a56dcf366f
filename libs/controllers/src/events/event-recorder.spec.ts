import type { CoreV1Event } from '@kubernetes/client-node';
import { EventKind, PodKind } from '@aro/kube';
import { FakeKubeClient } from '@aro/kube/testing';
import { silentLogger } from '@aro/observability';
import { EventRecorder } from './event-recorder';

describe('EventRecorder aggregation', () => {
  const T0 = Date.UTC(2026, 0, 1);

  function setup() {
    const clock = { now: T0 };
    const kube = new FakeKubeClient(() => clock.now);
    const recorder = new EventRecorder(kube, 'aro-test', silentLogger, 'all', { now: () => clock.now });
    const pod = kube.seed(PodKind, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { namespace: 'ns', name: 'runner-1' },
    });
    const events = async () => {
      await recorder.settled();
      return (await kube.list<CoreV1Event>(EventKind, { namespace: 'ns' }))
        .map((e) => ({ reason: e.reason, message: e.message, count: e.count }))
        .sort((a, b) => (a.message ?? '').localeCompare(b.message ?? ''));
    };
    return { clock, recorder, pod, events };
  }

  it('folds repeats of the same reason and message into one Event with a count', async () => {
    const s = setup();
    s.recorder.record(s.pod, 'Warning', 'RegistrationFailed', 'credential refused');
    s.clock.now += 5_000;
    s.recorder.record(s.pod, 'Warning', 'RegistrationFailed', 'credential refused');
    expect(await s.events()).toEqual([
      { reason: 'RegistrationFailed', message: 'credential refused', count: 2 },
    ]);
  });

  it('a changed cause under the same reason is an Event of its own, so its new message shows', async () => {
    const s = setup();
    s.recorder.record(s.pod, 'Warning', 'RegistrationFailed', 'credential refused');
    await s.events();
    s.clock.now += 5_000;
    s.recorder.record(s.pod, 'Warning', 'RegistrationFailed', 'proxy 127.0.0.1:3128 could not be reached');
    expect(await s.events()).toEqual([
      { reason: 'RegistrationFailed', message: 'credential refused', count: 1 },
      { reason: 'RegistrationFailed', message: 'proxy 127.0.0.1:3128 could not be reached', count: 1 },
    ]);
  });
});
