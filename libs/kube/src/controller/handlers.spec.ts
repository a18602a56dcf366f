import type { ResourceKind } from '@aro/api';
import type { V1OwnerReference } from '@kubernetes/client-node';
import type { KubeObject } from '../client';
import { enqueueControllingOwner, enqueueMapped, enqueueObject } from './handlers';
import { generationChangedPredicate, objectPredicate, resourceVersionChangedPredicate } from './predicates';
import { requestFromKey, requestKey } from './types';

const RunnerKind: ResourceKind = {
  group: 'actions.github.com',
  version: 'v1alpha1',
  kind: 'EphemeralRunner',
  plural: 'ephemeralrunners',
  namespaced: true,
};

function owned(refs: Partial<V1OwnerReference>[], namespace = 'ns'): KubeObject {
  return {
    metadata: {
      namespace,
      name: 'pod',
      ownerReferences: refs.map((r) => ({ apiVersion: '', kind: '', name: '', uid: 'uid', ...r })),
    },
  };
}

describe('enqueueControllingOwner', () => {
  const map = enqueueControllingOwner(RunnerKind);
  const runnerRef = { apiVersion: 'actions.github.com/v1alpha1', kind: 'EphemeralRunner', controller: true };

  it('maps an owned object to its controlling owner in the same namespace', () => {
    expect(map({ type: 'added', object: owned([{ ...runnerRef, name: 'runner-1' }]) })).toEqual([
      { namespace: 'ns', name: 'runner-1' },
    ]);
  });

  it('matches the owner by group and kind whatever its version', () => {
    const ref = { ...runnerRef, apiVersion: 'actions.github.com/v1beta1', name: 'runner-1' };
    expect(map({ type: 'added', object: owned([ref]) })).toEqual([{ namespace: 'ns', name: 'runner-1' }]);
  });

  it('ignores owners that are not the controller, or of another kind or group', () => {
    const object = owned([
      { ...runnerRef, controller: false, name: 'not-controller' },
      { ...runnerRef, controller: undefined, name: 'unset' },
      { ...runnerRef, kind: 'EphemeralRunnerSet', name: 'other-kind' },
      { ...runnerRef, apiVersion: 'other.io/v1alpha1', name: 'other-group' },
    ]);
    expect(map({ type: 'deleted', object })).toEqual([]);
  });

  it('enqueues both the old and the new owner when ownership moves', () => {
    const before = owned([{ ...runnerRef, name: 'old' }]);
    const after = owned([{ ...runnerRef, name: 'new' }]);
    expect(map({ type: 'modified', object: after, oldObject: before })).toEqual([
      { namespace: 'ns', name: 'new' },
      { namespace: 'ns', name: 'old' },
    ]);
    expect(map({ type: 'modified', object: after, oldObject: after })).toEqual([
      { namespace: 'ns', name: 'new' },
    ]);
  });

  it('gives a cluster-scoped owner an empty namespace', () => {
    const clusterMap = enqueueControllingOwner({ ...RunnerKind, namespaced: false });
    expect(clusterMap({ type: 'added', object: owned([{ ...runnerRef, name: 'r' }]) })).toEqual([
      { namespace: '', name: 'r' },
    ]);
  });
});

describe('enqueueObject and enqueueMapped', () => {
  it('maps an object to its own key', () => {
    expect(enqueueObject()({ type: 'added', object: { metadata: { namespace: 'a', name: 'b' } } })).toEqual([
      { namespace: 'a', name: 'b' },
    ]);
  });

  it('maps both sides of an update through a mapper, without duplicates', () => {
    const byLabel = enqueueMapped((o: KubeObject) => [
      { namespace: 'x', name: o.metadata?.labels?.target ?? '' },
    ]);
    const oldObj = { metadata: { labels: { target: 't1' } } };
    const newObj = { metadata: { labels: { target: 't2' } } };
    expect(byLabel({ type: 'modified', object: newObj, oldObject: oldObj }).map(requestKey)).toEqual([
      'x/t2',
      'x/t1',
    ]);
  });
});

describe('predicates', () => {
  it('resourceVersionChanged passes creates, deletes and real updates only', () => {
    const p = resourceVersionChangedPredicate;
    const v1 = { metadata: { resourceVersion: '1' } };
    const v2 = { metadata: { resourceVersion: '2' } };
    expect(p.create).toBeUndefined();
    expect(p.delete).toBeUndefined();
    expect(p.update!(v1, v1)).toBe(false);
    expect(p.update!(v1, v2)).toBe(true);
    expect(p.update!(undefined, v2)).toBe(true);
  });

  it('generationChanged drops status-only updates', () => {
    const p = generationChangedPredicate;
    expect(p.update!({ metadata: { generation: 1 } }, { metadata: { generation: 1 } })).toBe(false);
    expect(p.update!({ metadata: { generation: 1 } }, { metadata: { generation: 2 } })).toBe(true);
  });

  it('objectPredicate applies one test to every event', () => {
    const p = objectPredicate((o: KubeObject) => o.metadata?.name === 'yes');
    expect(p.create!({ metadata: { name: 'yes' } })).toBe(true);
    expect(p.update!({ metadata: { name: 'yes' } }, { metadata: { name: 'no' } })).toBe(false);
    expect(p.delete!({ metadata: { name: 'no' } })).toBe(false);
  });
});

describe('request keys', () => {
  it('round-trips namespaced and cluster-scoped requests', () => {
    expect(requestKey({ namespace: 'ns', name: 'n' })).toBe('ns/n');
    expect(requestKey({ namespace: '', name: 'n' })).toBe('n');
    expect(requestFromKey('ns/n')).toEqual({ namespace: 'ns', name: 'n' });
    expect(requestFromKey('n')).toEqual({ namespace: '', name: 'n' });
  });
});
