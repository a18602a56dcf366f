import { CoreSchemaConverter, QUANTITY_PATTERN, type OpenApiDocument } from './core-schemas';

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const wrapped = (name: string) => ({ allOf: [ref(name)], default: {}, description: 'wrapper' });

function converter(schemas: OpenApiDocument['components']['schemas']): CoreSchemaConverter {
  return new CoreSchemaConverter({ components: { schemas } });
}

describe('CoreSchemaConverter', () => {
  it('resolves $ref and allOf wrappers and drops descriptions and strategic-merge hints', () => {
    const schemas = {
      Outer: {
        description: 'outer',
        type: 'object',
        properties: {
          items: {
            type: 'array',
            items: wrapped('Item'),
            'x-kubernetes-list-type': 'map',
            'x-kubernetes-list-map-keys': ['name'],
            'x-kubernetes-patch-merge-key': 'name',
            'x-kubernetes-patch-strategy': 'merge',
          },
        },
      },
      Item: {
        type: 'object',
        required: ['name'],
        properties: { name: { type: 'string', description: 'n' } },
      },
    };
    expect(converter(schemas).convertNamed('Outer')).toEqual({
      type: 'object',
      properties: {
        items: {
          type: 'array',
          items: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['name'],
        },
      },
    });
  });

  it('keeps scalar defaults of optional fields only', () => {
    const schemas = {
      Port: {
        type: 'object',
        required: ['containerPort', 'name'],
        properties: {
          containerPort: { type: 'integer', format: 'int32', default: 0 },
          name: { type: 'string', default: '' },
          protocol: { type: 'string', default: 'TCP' },
          nested: { ...wrapped('Empty') },
        },
      },
      Empty: { type: 'object', properties: {} },
    };
    expect(converter(schemas).convertNamed('Port')).toEqual({
      type: 'object',
      required: ['containerPort', 'name'],
      properties: {
        containerPort: { type: 'integer', format: 'int32' },
        name: { type: 'string' },
        protocol: { type: 'string', default: 'TCP' },
        nested: { type: 'object', properties: {} },
      },
    });
  });

  it('spells int-or-string, quantities, times and embedded object metadata as CRDs need them', () => {
    const schemas = {
      Holder: {
        type: 'object',
        properties: {
          port: ref('io.k8s.apimachinery.pkg.util.intstr.IntOrString'),
          cpu: ref('io.k8s.apimachinery.pkg.api.resource.Quantity'),
          at: ref('io.k8s.apimachinery.pkg.apis.meta.v1.Time'),
          metadata: wrapped('io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta'),
        },
      },
    };
    const out = converter(schemas).convertNamed('Holder');
    expect(out.properties?.port).toEqual({
      anyOf: [{ type: 'integer' }, { type: 'string' }],
      'x-kubernetes-int-or-string': true,
    });
    expect(out.properties?.cpu?.pattern).toBe(QUANTITY_PATTERN);
    expect(new RegExp(QUANTITY_PATTERN).test('500m')).toBe(true);
    expect(new RegExp(QUANTITY_PATTERN).test('lots')).toBe(false);
    expect(out.properties?.at).toEqual({ type: 'string', format: 'date-time' });
    expect(Object.keys(out.properties?.metadata?.properties ?? {})).toEqual([
      'annotations',
      'finalizers',
      'labels',
      'name',
      'namespace',
    ]);
  });

  it('returns independent copies, so editing one inlined type cannot change another', () => {
    const c = converter({ T: { type: 'object', properties: { a: { type: 'string' } } } });
    const first = c.convertNamed('T');
    first.properties!.a.description = 'changed';
    expect(c.convertNamed('T').properties?.a).toEqual({ type: 'string' });
  });

  it('refuses keywords it has no CRD translation for, naming where', () => {
    const c = converter({ T: { type: 'object', properties: { a: { oneOf: [{ type: 'string' }] } } } });
    expect(() => c.convertNamed('T')).toThrow('T.a: keyword oneOf has no CRD translation');
  });

  it('refuses recursive types, which a CRD cannot inline', () => {
    const c = converter({ Node: { type: 'object', properties: { child: ref('Node') } } });
    expect(() => c.convertNamed('Node')).toThrow('recursive schema Node -> Node');
  });

  it('names a missing component', () => {
    expect(() => converter({}).convertNamed('io.k8s.api.core.v1.Nope')).toThrow(
      'no schema named io.k8s.api.core.v1.Nope',
    );
  });
});
