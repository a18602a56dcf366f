import { Test } from '@nestjs/testing';
import { ALL_KINDS, API_VERSION, ApiModule, apiVersionOf, crdManifestPaths, crdManifests } from './index';

describe('@aro/api', () => {
  it('has a CRD manifest for every kind descriptor, with matching group, version and plural', async () => {
    const served = (await crdManifests()).map((crd) => ({
      group: crd.spec.group,
      version: crd.spec.versions[0].name,
      kind: crd.spec.names.kind,
      plural: crd.spec.names.plural,
      namespaced: crd.spec.scope === 'Namespaced',
    }));
    expect(served).toEqual(expect.arrayContaining(ALL_KINDS.map((k) => ({ ...k }))));
    expect(served).toHaveLength(ALL_KINDS.length);
    expect(crdManifestPaths()).toHaveLength(ALL_KINDS.length);
    for (const kind of ALL_KINDS) expect(apiVersionOf(kind)).toBe(API_VERSION);
  });

  it('provides ApiModule to a Nest application', async () => {
    const moduleRef = await Test.createTestingModule({ imports: [ApiModule] }).compile();
    expect(moduleRef.get(ApiModule)).toBeInstanceOf(ApiModule);
    await moduleRef.close();
  });
});
