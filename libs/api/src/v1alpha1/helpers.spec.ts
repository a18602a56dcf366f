import type { V1Container } from '@kubernetes/client-node';
import type { EphemeralRunner, EphemeralRunnerPhase, EphemeralRunnerStatus } from './ephemeral-runner-types';
import {
  failureCount,
  formatFailureTime,
  hasContainerHookConfigured,
  hasJob,
  isDone,
  lastFailure,
} from './helpers';

function runner(status?: EphemeralRunnerStatus, containers: V1Container[] = []): EphemeralRunner {
  return {
    metadata: { name: 'r', namespace: 'ns' },
    spec: {
      githubConfigUrl: 'https://github.com/org',
      githubConfigSecret: 'secret',
      runnerScaleSetId: 1,
      spec: { containers },
    },
    status,
  };
}

describe('isDone', () => {
  it.each<[EphemeralRunnerPhase, boolean]>([
    ['Pending', false],
    ['Running', false],
    ['Succeeded', true],
    ['Failed', true],
    ['Outdated', true],
  ])('phase %s -> %s', (phase, done) => {
    expect(isDone(runner({ phase }))).toBe(done);
  });

  it('treats a runner without status or phase as not done', () => {
    expect(isDone(runner())).toBe(false);
    expect(isDone(runner({ ready: false }))).toBe(false);
  });
});

describe('hasJob', () => {
  it('is true once a job id is set', () => {
    expect(hasJob(runner({ jobId: '42' }))).toBe(true);
  });

  it('ignores the job request id, as upstream does', () => {
    expect(hasJob(runner({ jobRequestId: 7 }))).toBe(false);
    expect(hasJob(runner({ jobId: '' }))).toBe(false);
    expect(hasJob(runner())).toBe(false);
  });
});

describe('hasContainerHookConfigured', () => {
  const hooks = { name: 'ACTIONS_RUNNER_CONTAINER_HOOKS', value: '/home/runner/k8s/index.js' };

  it('finds the hooks env var on the runner container', () => {
    expect(hasContainerHookConfigured(runner(undefined, [{ name: 'runner', env: [hooks] }]))).toBe(true);
  });

  it('ignores the env var on other containers', () => {
    const containers = [{ name: 'sidecar', env: [hooks] }, { name: 'runner' }];
    expect(hasContainerHookConfigured(runner(undefined, containers))).toBe(false);
  });

  it('checks only the first container named runner', () => {
    const containers = [{ name: 'runner' }, { name: 'runner', env: [hooks] }];
    expect(hasContainerHookConfigured(runner(undefined, containers))).toBe(false);
  });

  it('is false without a pod spec', () => {
    const bare = runner();
    delete bare.spec.spec;
    expect(hasContainerHookConfigured(bare)).toBe(false);
  });
});

describe('lastFailure and failureCount', () => {
  it('returns the latest failure regardless of map order', () => {
    const status = {
      failures: {
        'uid-b': '2026-01-02T10:00:05Z',
        'uid-a': '2026-01-02T10:00:20Z',
        'uid-c': '2026-01-02T09:59:59Z',
      },
    };
    expect(lastFailure(status)).toEqual(new Date('2026-01-02T10:00:20Z'));
    expect(failureCount(status)).toBe(3);
  });

  it('is undefined with no failures', () => {
    expect(lastFailure(undefined)).toBeUndefined();
    expect(lastFailure({ failures: {} })).toBeUndefined();
    expect(failureCount(undefined)).toBe(0);
  });

  it('skips values that are not timestamps but still counts them as failures', () => {
    const status = { failures: { a: 'not-a-time', b: '2026-01-02T10:00:00Z' } };
    expect(lastFailure(status)).toEqual(new Date('2026-01-02T10:00:00Z'));
    expect(failureCount(status)).toBe(2);
  });
});

describe('formatFailureTime', () => {
  it('writes RFC 3339 UTC with second precision, like metav1.Time', () => {
    expect(formatFailureTime(new Date('2026-03-04T05:06:07.891Z'))).toBe('2026-03-04T05:06:07Z');
  });

  it('round-trips through lastFailure at second precision', () => {
    const at = new Date('2026-03-04T05:06:07Z');
    expect(lastFailure({ failures: { u: formatFailureTime(at) } })).toEqual(at);
  });
});
