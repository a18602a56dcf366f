import { CanaryAnnotations, canaryRunnerSetName, canarySetOfRunner, canarySettingsOf } from './canary';

const { runners, jobs, tolerancePercent } = CanaryAnnotations;

describe('canarySettingsOf', () => {
  it('is off without the runners annotation, or with 0 or 0%', () => {
    expect(canarySettingsOf(undefined, 10)).toEqual({});
    expect(canarySettingsOf({ [runners]: '0' }, 10)).toEqual({});
    expect(canarySettingsOf({ [runners]: '0%' }, 10)).toEqual({});
  });

  it('reads a count or a share of maxRunners (at least 1), with the defaults', () => {
    expect(canarySettingsOf({ [runners]: '2' }, 10).settings).toEqual({
      runners: 2,
      jobs: 5,
      tolerancePercent: 0,
    });
    expect(canarySettingsOf({ [runners]: '10%' }, 50).settings?.runners).toBe(5);
    expect(canarySettingsOf({ [runners]: '10%' }, 3).settings?.runners).toBe(1);
    expect(
      canarySettingsOf({ [runners]: '1', [jobs]: '3', [tolerancePercent]: '12.5' }, 10).settings,
    ).toEqual({ runners: 1, jobs: 3, tolerancePercent: 12.5 });
  });

  it('names the annotation it cannot read', () => {
    expect(canarySettingsOf({ [runners]: 'some' }, 10).problem).toContain(runners);
    expect(canarySettingsOf({ [runners]: '1', [jobs]: '0' }, 10).problem).toContain(jobs);
    expect(canarySettingsOf({ [runners]: '1', [tolerancePercent]: '101' }, 10).problem).toContain(
      tolerancePercent,
    );
  });
});

describe('canary runner names', () => {
  it('tells a canary runner from one of the set by its name alone', () => {
    const set = canaryRunnerSetName('arc', '3f9c0a1d2b7e4c55');
    expect(set).toBe('arc-canary-3f9c0a');
    expect(canarySetOfRunner('arc', `${set}-runner-x7k2p`)).toBe(set);
    expect(canarySetOfRunner('arc', 'arc-runner-x7k2p')).toBeUndefined();
    // A set whose own name begins like a canary's of another set is not taken for one.
    expect(canarySetOfRunner('arc', 'arc-canary-runner-x7k2p')).toBeUndefined();
  });
});
