import { done, requeue, requeueAfter, sooner } from './types';

describe('reconcile results', () => {
  it('always requeues a computed wait, however small, rounded up to a whole millisecond', () => {
    expect(requeueAfter(0)).toEqual({ requeueAfterMs: 1 });
    expect(requeueAfter(-5)).toEqual({ requeueAfterMs: 1 });
    expect(requeueAfter(0.2)).toEqual({ requeueAfterMs: 1 });
    expect(requeueAfter(1_500.1)).toEqual({ requeueAfterMs: 1_501 });
    expect(Object.isFrozen(done)).toBe(true);
  });

  it('picks the result that comes back first', () => {
    expect(sooner(requeue(), requeueAfter(5))).toEqual(requeue());
    expect(sooner(done, requeueAfter(5))).toEqual(requeueAfter(5));
    expect(sooner(requeueAfter(5), done)).toEqual(requeueAfter(5));
    expect(sooner(requeueAfter(9), requeueAfter(5))).toEqual(requeueAfter(5));
  });
});
