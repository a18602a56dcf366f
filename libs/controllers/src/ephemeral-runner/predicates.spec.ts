import type { V1Pod } from '@kubernetes/client-node';
import type { EphemeralRunner } from '@aro/api';
import { ephemeralRunnerPredicate, ownedPodPredicate } from './predicates';

const runner = (status: EphemeralRunner['status'], finalizers: string[] = []): EphemeralRunner => ({
  metadata: { name: 'r', namespace: 'ns', resourceVersion: '1', finalizers },
  spec: { githubConfigUrl: 'https://github.com/o', githubConfigSecret: 's', runnerScaleSetId: 1 },
  status,
});

describe('ephemeralRunnerPredicate', () => {
  const update = (a: EphemeralRunner, b: EphemeralRunner) => ephemeralRunnerPredicate().update!(a, b);

  it('drops updates that only change job details the reconciler never reads', () => {
    expect(
      update(
        runner({ phase: 'Running', jobId: 'j' }),
        runner({ phase: 'Running', jobId: 'j', jobDisplayName: 'build' }),
      ),
    ).toBe(false);
  });

  it('passes updates of the phase, readiness, identity, job assignment, failures and finalizers', () => {
    expect(update(runner({ phase: 'Pending' }), runner({ phase: 'Running' }))).toBe(true);
    expect(update(runner({ ready: false }), runner({ ready: true }))).toBe(true);
    expect(update(runner({}), runner({ runnerId: 3 }))).toBe(true);
    expect(update(runner({ phase: 'Pending' }), runner({ phase: 'Pending', jobId: 'j' }))).toBe(true);
    expect(update(runner({}), runner({ failures: { u: '2026-01-01T00:00:00Z' } }))).toBe(true);
    expect(update(runner({}), runner({}, ['f']))).toBe(true);
  });

  it('passes an update whose previous state is unknown', () => {
    expect(ephemeralRunnerPredicate().update!(undefined, runner({}))).toBe(true);
  });
});

describe('ownedPodPredicate', () => {
  const pod = (status: V1Pod['status'], uid = 'u1'): V1Pod => ({ metadata: { name: 'r', uid }, status });
  const update = (a: V1Pod, b: V1Pod) => ownedPodPredicate().update!(a, b);

  it('drops updates of pod fields the reconciler never reads', () => {
    expect(
      update(pod({ phase: 'Running' }), pod({ phase: 'Running', podIP: '10.0.0.1', hostIP: '10.0.0.2' })),
    ).toBe(false);
  });

  it('passes container status, phase, readiness and UID changes', () => {
    expect(update(pod({ phase: 'Pending' }), pod({ phase: 'Running' }))).toBe(true);
    expect(
      update(
        pod({ containerStatuses: [] }),
        pod({
          containerStatuses: [{ name: 'runner', image: 'i', imageID: '', ready: false, restartCount: 0 }],
        }),
      ),
    ).toBe(true);
    expect(update(pod({ conditions: [] }), pod({ conditions: [{ type: 'Ready', status: 'True' }] }))).toBe(
      true,
    );
    expect(update(pod({}, 'u1'), pod({}, 'u2'))).toBe(true);
  });
});
