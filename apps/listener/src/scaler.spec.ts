import { Annotations, type ResourceKind } from '@aro/api';
import { KubeApiError, type KubeObject } from '@aro/kube';
import { silentLogger } from '@aro/observability';
import { PatchClient, Scaler } from './scaler';

/** A fake apiserver holding one EphemeralRunnerSet spec, applying merge patches as the real one does. */
class FakeErs implements PatchClient {
  spec: Record<string, unknown> = { replicas: 0, patchID: 0 };
  annotations: Record<string, string> = {};
  failNext = 0;

  mergePatch<T extends KubeObject>(_k: ResourceKind, _ns: string, _n: string, patch: object): Promise<T> {
    if (this.failNext > 0) {
      this.failNext--;
      return Promise.reject(new KubeApiError(500, { verb: 'patch', kind: _k, namespace: _ns, name: _n }));
    }
    const { spec, metadata } = patch as {
      spec?: Record<string, unknown>;
      metadata?: { annotations?: Record<string, string | null> };
    };
    this.spec = { ...this.spec, ...spec };
    // A merge patch's null removes the key.
    for (const [k, v] of Object.entries(metadata?.annotations ?? {})) {
      if (v === null) delete this.annotations[k];
      else this.annotations[k] = v;
    }
    return Promise.resolve({} as T);
  }

  mergePatchStatus<T extends KubeObject>(): Promise<T> {
    return Promise.reject(new Error('the scaler never patches status'));
  }
}

function scaler(min: number, max: number, ers = new FakeErs()) {
  const s = new Scaler(ers, {
    namespace: 'ns',
    name: 'set',
    minRunners: min,
    maxRunners: max,
    logger: silentLogger,
  });
  return { s, ers };
}

describe('Scaler', () => {
  it('wants min(maxRunners, assigned + minRunners)', () => {
    const { s } = scaler(2, 5);
    expect(s.decide(0).replicas).toBe(2);
    expect(s.decide(1).replicas).toBe(3);
    expect(s.decide(3).replicas).toBe(5);
    expect(s.decide(40).replicas).toBe(5);
  });

  it('numbers patches 0, 1, 2, ... and forces convergence (patchID 0) only when idle at minRunners', () => {
    const { s } = scaler(1, 10);
    // The first patch (sequence 0) is a forced convergence by construction: nothing is known yet.
    expect(s.decide(0)).toEqual({ replicas: 1, patchID: 0 });
    // Same target, no events, target == min: converge again.
    expect(s.decide(0)).toEqual({ replicas: 1, patchID: 0 });
    expect(s.decide(2)).toEqual({ replicas: 3, patchID: 2 });
    // Target unchanged but not at minRunners: a real patch.
    expect(s.decide(2)).toEqual({ replicas: 3, patchID: 3 });
    // Back at min, but the target changed since the last decision: a real patch first...
    expect(s.decide(0)).toEqual({ replicas: 1, patchID: 4 });
    // ...then, with nothing happening, convergence.
    expect(s.decide(0)).toEqual({ replicas: 1, patchID: 0 });
  });

  it('does not force convergence right after a job started or completed', () => {
    const { s } = scaler(0, 10);
    s.decide(0);
    s.decide(0);
    s.markJobEvent();
    expect(s.decide(0)).toEqual({ replicas: 0, patchID: 2 });
    // The event is consumed by that decision.
    expect(s.decide(0)).toEqual({ replicas: 0, patchID: 0 });
  });

  it('names the runners of completed jobs on the next patch written, once, and keeps them through a failed write', async () => {
    const { s, ers } = scaler(0, 10);
    await s.setDesired(2);
    expect(ers.annotations[Annotations.completedRunners]).toBeUndefined();

    s.markJobEvent('runner-a');
    s.markJobEvent('runner-b');
    ers.failNext = 1;
    await expect(s.setDesired(1)).rejects.toThrow();
    await s.flushPending();
    // The patch whose count left their jobs out names them.
    expect(ers.spec.replicas).toBe(1);
    expect(ers.annotations[Annotations.completedRunners]).toBe('runner-a,runner-b');

    // The next patch names none: the annotation is cleared, so no later count claims them.
    s.markJobEvent();
    await s.setDesired(2);
    expect(ers.annotations[Annotations.completedRunners]).toBeUndefined();
  });

  it('wraps the sequence after MaxInt32 to 1, never to 0 (which means converge)', () => {
    const { s } = scaler(0, 10);
    (s as unknown as { patchSeq: number }).patchSeq = 2 ** 31 - 2;
    expect(s.decide(1).patchID).toBe(2 ** 31 - 1);
    expect(s.decide(2).patchID).toBe(1);
  });

  it('writes both fields as a merge patch, and resends a failed write before anything else', async () => {
    const { s, ers } = scaler(0, 10);
    await s.setDesired(3);
    // Upstream's sequence starts at 0, so the first patch after a start also lets the set converge.
    expect(ers.spec).toEqual({ replicas: 3, patchID: 0 });
    ers.failNext = 1;
    await expect(s.setDesired(5)).rejects.toThrow();
    expect(s.hasPending).toBe(true);
    expect(ers.spec.replicas).toBe(3);
    await s.flushPending();
    expect(ers.spec).toEqual({ replicas: 5, patchID: 1 });
    expect(s.hasPending).toBe(false);
  });

  describe('with warm headroom', () => {
    it('is upstream exactly at headroom 0: the same replicas and patchIDs as without it', () => {
      const plain = scaler(1, 4).s;
      const zero = scaler(1, 4).s;
      for (const assigned of [0, 0, 2, 2, 9, 0, 0, 0]) {
        if (assigned === 2) {
          plain.markJobEvent();
          zero.markJobEvent();
        }
        expect(zero.decide(assigned, 0)).toEqual(plain.decide(assigned));
      }
    });

    it('adds the headroom above minRunners and the jobs, never past maxRunners', () => {
      const { s } = scaler(1, 6);
      expect(s.decide(0, 2).replicas).toBe(3);
      expect(s.decide(2, 2).replicas).toBe(5);
      expect(s.decide(4, 2).replicas).toBe(6);
      expect(s.decide(0, 9).replicas).toBe(6);
    });

    it('converges (patchID 0) at minRunners + headroom, not at minRunners', () => {
      const { s } = scaler(1, 10);
      s.decide(0, 2);
      // Idle at the headroom's target: converge there, so the controller keeps the warm runners.
      expect(s.decide(0, 2)).toEqual({ replicas: 3, patchID: 0 });
      // Jobs assigned: above the floor, never a converge.
      s.decide(1, 2);
      expect(s.decide(1, 2).patchID).toBeGreaterThan(0);
      // The headroom shrinks: first written as a scale-up patch (no trimming), then converged to.
      s.decide(0, 2);
      const shrink = s.decide(0, 1);
      expect(shrink.replicas).toBe(2);
      expect(shrink.patchID).toBeGreaterThan(0);
      expect(s.decide(0, 1)).toEqual({ replicas: 2, patchID: 0 });
      // Decayed to none: back to minRunners.
      expect(s.decide(0, 0).patchID).toBeGreaterThan(0);
      expect(s.decide(0, 0)).toEqual({ replicas: 1, patchID: 0 });
    });
  });
});
