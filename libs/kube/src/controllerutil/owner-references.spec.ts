import type { KubeObject } from '../client/types';
import { controllerReference, isControlledBy, objectKey } from './owner-references';

describe('owner references', () => {
  const owner: KubeObject = { metadata: { namespace: 'ns', name: 'set', uid: 'u1' } };

  it('makes a controller reference that isControlledBy recognises, by UID only', () => {
    const ref = controllerReference(owner, 'EphemeralRunnerSet', 'actions.github.com/v1alpha1');
    expect(ref).toEqual({
      apiVersion: 'actions.github.com/v1alpha1',
      kind: 'EphemeralRunnerSet',
      name: 'set',
      uid: 'u1',
      controller: true,
      blockOwnerDeletion: true,
    });
    const child: KubeObject = { metadata: { ownerReferences: [ref] } };
    expect(isControlledBy(child, owner)).toBe(true);
    // A recreated owner of the same name is another object.
    expect(isControlledBy(child, { metadata: { ...owner.metadata, uid: 'u2' } })).toBe(false);
    // A plain (non-controller) reference does not make an owner the controller.
    expect(isControlledBy({ metadata: { ownerReferences: [{ ...ref, controller: false }] } }, owner)).toBe(
      false,
    );
    expect(objectKey(owner)).toBe('ns/set');
  });
});
