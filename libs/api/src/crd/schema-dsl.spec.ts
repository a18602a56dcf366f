import type { ProxyServerConfig, ResourceMeta } from '../v1alpha1/shared-types';
import type { EphemeralRunnerSetSpec } from '../v1alpha1/ephemeral-runner-set-types';
import type { EphemeralRunnerPhase } from '../v1alpha1/ephemeral-runner-types';
import { optional, optionalInCrd, required, t } from './schema-dsl';

/*
 * The `@ts-expect-error` lines are the drift guard: `npm run typecheck` fails if any of them stops being an
 * error, i.e. if the schema description could again disagree with the interfaces without tsc noticing.
 */
describe('schema description typing', () => {
  it('builds the property tree with required flags and descriptions', () => {
    const schema = t.object<ProxyServerConfig>({
      url: required(t.string()),
      credentialSecretRef: optional(t.string(), 'creds'),
    });
    expect(schema.node).toEqual({
      kind: 'object',
      description: undefined,
      properties: {
        url: { node: { kind: 'string' }, required: true, description: undefined },
        credentialSecretRef: { node: { kind: 'string' }, required: false, description: 'creds' },
      },
    });
  });

  it('rejects at compile time a description that disagrees with the interface', () => {
    const descriptions = [
      t.object<ResourceMeta>({
        labels: optional(t.map(t.string())),
        annotations: optional(t.map(t.string())),
        // @ts-expect-error a field the interface does not have
        extra: optional(t.string()),
      }),
      // @ts-expect-error a field of the interface left out
      t.object<ResourceMeta>({ labels: optional(t.map(t.string())) }),
      // @ts-expect-error wrong type: url is a string
      t.object<ProxyServerConfig>({ url: required(t.int()), credentialSecretRef: optional(t.string()) }),
      // @ts-expect-error an optional TS field cannot be required in the CRD
      t.object<ProxyServerConfig>({ url: required(t.string()), credentialSecretRef: required(t.string()) }),
      // @ts-expect-error a required TS field needs `required` or an explicit `optionalInCrd`
      t.object<ProxyServerConfig>({ url: optional(t.string()), credentialSecretRef: optional(t.string()) }),
      // @ts-expect-error a plain string is not the phase union (the phantom type is invariant)
      t.object<{ phase?: EphemeralRunnerPhase }>({ phase: optional(t.string()) }),
    ];
    expect(descriptions).toHaveLength(6);
  });

  it('lets a TS-required field stay optional in the CRD only when said so', () => {
    const schema = t.object<Pick<EphemeralRunnerSetSpec, 'patchID' | 'replicas'>>({
      patchID: optionalInCrd(t.int()),
      replicas: optional(t.int()),
    });
    expect(schema.node.kind === 'object' && schema.node.properties.patchID.required).toBe(false);
  });
});
