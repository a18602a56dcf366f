import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import {
  initContainerFailed,
  podDeleteOptions,
  podReady,
  podTerminated,
  runnerProcessExited,
} from './pod-state';

const running = (name: string): V1ContainerStatus =>
  ({
    name,
    ready: true,
    restartCount: 0,
    image: 'i',
    imageID: '',
    state: { running: {} },
  }) as V1ContainerStatus;
const exited = (name: string, exitCode: number): V1ContainerStatus =>
  ({
    name,
    ready: false,
    restartCount: 0,
    image: 'i',
    imageID: '',
    state: { terminated: { exitCode } },
  }) as V1ContainerStatus;

function pod(opts: {
  containers?: string[];
  phase?: string;
  statuses?: V1ContainerStatus[];
  initStatuses?: V1ContainerStatus[];
  conditions?: { type: string; status: string; lastTransitionTime?: string }[];
}): V1Pod {
  return {
    metadata: { name: 'runner-1', uid: 'u1' },
    spec: { containers: (opts.containers ?? ['runner']).map((name) => ({ name })) },
    status: {
      phase: opts.phase,
      containerStatuses: opts.statuses,
      initContainerStatuses: opts.initStatuses,
      conditions: opts.conditions,
    },
  } as V1Pod;
}

describe('podTerminated', () => {
  it('is true when every container has reported terminated', () => {
    expect(podTerminated(pod({ phase: 'Running', statuses: [exited('runner', 0)] }))).toBe(true);
  });

  it('is false while any reported container is running, even when the phase is Failed (lost node)', () => {
    const nodeLost = pod({
      containers: ['runner', 'sidecar'],
      phase: 'Failed',
      statuses: [exited('runner', 0), running('sidecar')],
    });
    expect(podTerminated(nodeLost)).toBe(false);
  });

  it('is false while a native sidecar (init container) is still running', () => {
    expect(
      podTerminated(
        pod({ phase: 'Running', statuses: [exited('runner', 0)], initStatuses: [running('proxy')] }),
      ),
    ).toBe(false);
  });

  it('counts containers that never reported as never run once the phase is terminal', () => {
    const initFailed = pod({ phase: 'Failed', initStatuses: [exited('setup', 1)], statuses: [] });
    expect(podTerminated(initFailed)).toBe(true);
  });

  it('needs every container to have reported before the phase is terminal', () => {
    const halfReported = pod({
      containers: ['runner', 'sidecar'],
      phase: 'Running',
      statuses: [exited('runner', 0)],
    });
    expect(podTerminated(halfReported)).toBe(false);
  });

  it('is false for a pod nothing has reported on yet', () => {
    expect(podTerminated(pod({ phase: 'Pending' }))).toBe(false);
  });
});

/**
 * What lifts the busy marks of a runner being deleted while the service still holds its job
 * (eviction-protection.ts), and what lets the eviction webhook admit its pod: only the runner container's
 * own exit. A drain or an autoscaler takes the pod the moment the marks go.
 */
describe('runnerProcessExited', () => {
  const waiting = (name: string, reason: string): V1ContainerStatus =>
    ({ ...running(name), ready: false, state: { waiting: { reason } } }) as V1ContainerStatus;
  const withSidecar = (runner: V1ContainerStatus | undefined, sidecar: V1ContainerStatus) =>
    pod({
      containers: ['runner', 'dind'],
      phase: 'Running',
      statuses: runner ? [runner, sidecar] : [sidecar],
    });

  it('is true once the runner container reported terminated, whatever its exit code and the other containers', () => {
    expect(runnerProcessExited(withSidecar(exited('runner', 0), running('dind')))).toBe(true);
    expect(runnerProcessExited(withSidecar(exited('runner', 137), running('dind')))).toBe(true);
    expect(runnerProcessExited(pod({ phase: 'Failed', statuses: [exited('runner', 1)] }))).toBe(true);
  });

  it('is false while the runner container runs, even when every other container has exited', () => {
    expect(runnerProcessExited(withSidecar(running('runner'), running('dind')))).toBe(false);
    expect(runnerProcessExited(withSidecar(running('runner'), exited('dind', 0)))).toBe(false);
    expect(runnerProcessExited(withSidecar(running('runner'), exited('dind', 1)))).toBe(false);
  });

  it('is false while the runner container waits or has not reported, whatever the others did', () => {
    expect(runnerProcessExited(withSidecar(waiting('runner', 'ContainerCreating'), exited('dind', 0)))).toBe(
      false,
    );
    expect(runnerProcessExited(withSidecar(waiting('runner', 'CrashLoopBackOff'), running('dind')))).toBe(
      false,
    );
    expect(runnerProcessExited(withSidecar(undefined, exited('dind', 0)))).toBe(false);
    expect(runnerProcessExited(pod({ phase: 'Running' }))).toBe(false);
  });
});

describe('initContainerFailed', () => {
  it('is true for an init container that exited non-zero and false for one that exited 0', () => {
    expect(initContainerFailed(pod({ initStatuses: [exited('setup', 2)] }))).toBe(true);
    expect(initContainerFailed(pod({ initStatuses: [exited('setup', 0)] }))).toBe(false);
    expect(initContainerFailed(pod({ initStatuses: [running('setup')] }))).toBe(false);
  });
});

describe('podReady', () => {
  it('follows the most recent Ready condition', () => {
    const flapping = pod({
      conditions: [
        { type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' },
        { type: 'Ready', status: 'False', lastTransitionTime: '2026-01-01T00:01:00Z' },
      ],
    });
    expect(podReady(flapping)).toBe(false);
    const recovered = pod({
      conditions: [
        { type: 'Ready', status: 'False', lastTransitionTime: '2026-01-01T00:00:00Z' },
        { type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:01:00Z' },
      ],
    });
    expect(podReady(recovered)).toBe(true);
  });

  it('is false without a Ready condition', () => {
    expect(podReady(pod({ conditions: [{ type: 'PodScheduled', status: 'True' }] }))).toBe(false);
  });
});

describe('podDeleteOptions', () => {
  const stopped = pod({ phase: 'Running', statuses: [exited('runner', 0)] });
  const alive = pod({ phase: 'Running', statuses: [running('runner')] });

  it('deletes a pod with nothing running at once, pinned to the observed UID', () => {
    expect(podDeleteOptions(stopped, 0)).toEqual({ gracePeriodSeconds: 0, preconditions: { uid: 'u1' } });
    expect(podDeleteOptions(stopped, 15)).toEqual({ gracePeriodSeconds: 15, preconditions: { uid: 'u1' } });
  });

  it('deletes a pod still running anything gracefully, and leaves the grace alone when negative', () => {
    expect(podDeleteOptions(alive, 0)).toBeUndefined();
    expect(podDeleteOptions(stopped, -1)).toBeUndefined();
  });
});
