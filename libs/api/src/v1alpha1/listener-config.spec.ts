import { WarmHeadroomAnnotations, warmHeadroomOf } from './listener-config';

const { maxRunners, windowSeconds } = WarmHeadroomAnnotations;

describe('warmHeadroomOf', () => {
  it('is off without the annotation, empty or at 0', () => {
    expect(warmHeadroomOf(undefined)).toEqual({});
    expect(warmHeadroomOf({ [maxRunners]: '' })).toEqual({});
    expect(warmHeadroomOf({ [maxRunners]: '0', [windowSeconds]: '60' })).toEqual({});
  });

  it('reads the cap and the window, 300 s when the window is not given', () => {
    expect(warmHeadroomOf({ [maxRunners]: '5' })).toEqual({
      config: { max_runners: 5, window_seconds: 300 },
    });
    expect(warmHeadroomOf({ [maxRunners]: '5', [windowSeconds]: '90' })).toEqual({
      config: { max_runners: 5, window_seconds: 90 },
    });
  });

  it('names a value that is not a whole number in range, and then asks for no headroom', () => {
    expect(warmHeadroomOf({ [maxRunners]: 'lots' })).toEqual({
      problem: `${maxRunners} "lots" is not a whole number`,
    });
    expect(warmHeadroomOf({ [maxRunners]: '3', [windowSeconds]: '0' }).problem).toMatch(windowSeconds);
    expect(warmHeadroomOf({ [maxRunners]: '3', [windowSeconds]: '1.5' }).config).toBeUndefined();
  });
});
