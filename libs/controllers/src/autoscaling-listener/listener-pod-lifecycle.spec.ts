import type { V1Pod } from '@kubernetes/client-node';
import { AUTOSCALING_LISTENER_CONTAINER_NAME, AutoscalingListener, AutoscalingListenerKind } from '@aro/api';
import { PodKind } from '@aro/kube';
import { FakeKubeClient } from '@aro/kube/testing';
import { silentLogger } from '@aro/observability';
import type { SecretResolver } from '@aro/secrets';
import { listenerContext } from './listener-context';
import { ListenerPodLifecycle } from './listener-pod-lifecycle';

/*
 * The listener pod's restart backoff, on a fake API server and a fake clock: the count of restarts in
 * a row, which sets the wait before the next pod, resets only once a pod has run for `stableAfterMs`.
 */

const NS = 'arc-system';
const NAME = 'arc-runners-listener';
const T0 = Date.UTC(2026, 0, 1);
const SECOND = 1_000;
const BASE_MS = 5 * SECOND;
const STABLE_MS = 120 * SECOND;

function setup() {
  const clock = { now: T0 };
  const kube = new FakeKubeClient(() => clock.now);
  const ctx = listenerContext(
    { client: kube, cache: kube, resolver: {} as SecretResolver, logger: silentLogger, now: () => clock.now },
    { restartBackoffBaseMs: BASE_MS, stableAfterMs: STABLE_MS },
  );
  const lifecycle = new ListenerPodLifecycle(ctx);
  kube.seed<AutoscalingListener>(AutoscalingListenerKind, {
    apiVersion: 'actions.github.com/v1alpha1',
    kind: 'AutoscalingListener',
    metadata: { namespace: NS, name: NAME },
    spec: {},
  } as AutoscalingListener);
  const desired: V1Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { namespace: NS, name: NAME },
    spec: { containers: [{ name: AUTOSCALING_LISTENER_CONTAINER_NAME, image: 'listener' }] },
  };
  const listener = () => kube.peek<AutoscalingListener>(AutoscalingListenerKind, NS, NAME)!;
  const pod = () => kube.peek<V1Pod>(PodKind, NS, NAME);
  const reconcile = () =>
    lifecycle.reconcile(
      { obj: listener(), key: `${NS}/${NAME}`, signal: new AbortController().signal, log: silentLogger },
      desired,
    );
  /** What the kubelet reports of the listener container: running since `startedAt`, or exited. */
  const containerIs = async (state: 'running' | 'exited', startedAt = clock.now) => {
    const p = pod()!;
    await kube.mergePatchStatus(PodKind, NS, NAME, {
      status: {
        phase: 'Running',
        containerStatuses: [
          {
            name: AUTOSCALING_LISTENER_CONTAINER_NAME,
            image: 'listener',
            imageID: '',
            ready: state === 'running',
            restartCount: 0,
            state:
              state === 'running'
                ? { running: { startedAt: new Date(startedAt) } }
                : { terminated: { exitCode: 1, reason: 'Error' } },
          },
        ],
      },
    });
    return p;
  };
  return { clock, kube, listener, pod, reconcile, containerIs };
}

/** Crashes the current pod, and waits out the backoff until the next one is created; returns that wait. */
async function crashAndRecreate(s: ReturnType<typeof setup>): Promise<number> {
  await s.containerIs('exited');
  const result = await s.reconcile();
  const waitMs = result.requeueAfterMs ?? 0;
  expect(s.pod()).toBeUndefined();
  s.clock.now += waitMs;
  await s.reconcile();
  expect(s.pod()).toBeDefined();
  return waitMs;
}

describe('ListenerPodLifecycle restart backoff', () => {
  it('a pod that crashes soon after running keeps the backoff growing; one stable long enough resets it', async () => {
    const s = setup();
    await s.reconcile();
    await s.containerIs('running');
    await s.reconcile();

    expect(await crashAndRecreate(s)).toBe(BASE_MS);
    expect(await crashAndRecreate(s)).toBe(2 * BASE_MS);

    // Running for a moment (less than stableAfterMs) is no proof the listener works: no reset.
    await s.containerIs('running');
    s.clock.now += 10 * SECOND;
    await s.reconcile();
    expect(s.listener().status?.restarts).toBe(2);
    expect(await crashAndRecreate(s)).toBe(4 * BASE_MS);

    // Stable for stableAfterMs: the next crash starts from the base wait again.
    await s.containerIs('running');
    s.clock.now += STABLE_MS;
    await s.reconcile();
    expect(s.listener().status?.restarts).toBe(0);
    expect(await crashAndRecreate(s)).toBe(BASE_MS);
  });
});
