import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { judgeStart, soonerRequeue } from './start-watchdog';

const CREATED = Date.parse('2026-12-03T10:00:00Z');
const TIMEOUT = 10 * 60_000;

function pod(status: V1Pod['status'], deleting = false): V1Pod {
  return {
    metadata: {
      name: 'r',
      creationTimestamp: new Date(CREATED),
      ...(deleting ? { deletionTimestamp: new Date(CREATED + 1) } : {}),
    },
    status,
  };
}

function waiting(reason: string, message?: string): V1ContainerStatus {
  return {
    name: 'runner',
    image: 'x',
    imageID: '',
    ready: false,
    restartCount: 0,
    state: { waiting: { reason, message } },
  };
}

describe('judgeStart', () => {
  it('leaves running, finished and deleted pods to the pod follower', () => {
    for (const phase of ['Running', 'Succeeded', 'Failed']) {
      expect(judgeStart(pod({ phase }), CREATED + 2 * TIMEOUT, TIMEOUT)).toEqual({ state: 'started' });
    }
    expect(judgeStart(pod({ phase: 'Pending' }, true), CREATED + 2 * TIMEOUT, TIMEOUT)).toEqual({
      state: 'started',
    });
  });

  it('gives a slow Pending pod the whole timeout, then fails it with the scheduler reason', () => {
    const unschedulable = pod({
      phase: 'Pending',
      conditions: [
        {
          type: 'PodScheduled',
          status: 'False',
          reason: 'Unschedulable',
          message: '0/3 nodes are available',
        },
      ],
    });
    expect(judgeStart(unschedulable, CREATED + TIMEOUT - 1_000, TIMEOUT)).toEqual({
      state: 'starting',
      remainingMs: 1_000,
    });
    expect(judgeStart(unschedulable, CREATED + TIMEOUT, TIMEOUT)).toMatchObject({
      state: 'stalled',
      reason: 'Unschedulable',
      message: expect.stringContaining('0/3 nodes are available') as string,
    });
  });

  it('ends a permanent waiting reason at once, and a recoverable one only at the timeout', () => {
    const invalid = pod({ phase: 'Pending', containerStatuses: [waiting('InvalidImageName', 'bad ref')] });
    expect(judgeStart(invalid, CREATED + 1_000, TIMEOUT)).toMatchObject({
      state: 'stalled',
      reason: 'InvalidImageName',
      permanent: true,
    });
    const backoff = pod({
      phase: 'Pending',
      containerStatuses: [waiting('ImagePullBackOff', 'Back-off pulling')],
    });
    expect(judgeStart(backoff, CREATED + 1_000, TIMEOUT).state).toBe('starting');
    expect(judgeStart(backoff, CREATED + TIMEOUT, TIMEOUT)).toMatchObject({
      state: 'stalled',
      reason: 'ImagePullBackOff',
      message: expect.stringMatching(/Back-off pulling.*within 10m/) as string,
    });
  });

  it('prefers a waiting init container and skips reasons that mean progress', () => {
    const p = pod({
      phase: 'Pending',
      initContainerStatuses: [waiting('CreateContainerConfigError', 'secret "x" not found')],
      containerStatuses: [waiting('PodInitializing')],
    });
    expect(judgeStart(p, CREATED + TIMEOUT, TIMEOUT)).toMatchObject({ reason: 'CreateContainerConfigError' });
    const creating = pod({ phase: 'Pending', containerStatuses: [waiting('ContainerCreating')] });
    expect(judgeStart(creating, CREATED + TIMEOUT, TIMEOUT)).toMatchObject({ reason: 'StartTimeout' });
  });
});

describe('soonerRequeue', () => {
  it('keeps the sooner of the two requeues', () => {
    expect(soonerRequeue({}, 500)).toEqual({ requeueAfterMs: 500 });
    expect(soonerRequeue({ requeueAfterMs: 100 }, 500)).toEqual({ requeueAfterMs: 100 });
    expect(soonerRequeue({ requeueAfterMs: 900 }, 500)).toEqual({ requeueAfterMs: 500 });
    expect(soonerRequeue({ requeue: true }, 500)).toEqual({ requeue: true });
  });
});
