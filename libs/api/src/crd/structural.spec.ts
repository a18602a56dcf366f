import type { CrdSchema } from './crd-schema';
import { structuralViolations } from './structural';

const listOf = (item: CrdSchema, keys: string[]): CrdSchema => ({
  type: 'array',
  items: item,
  'x-kubernetes-list-type': 'map',
  'x-kubernetes-list-map-keys': keys,
});

describe('structuralViolations', () => {
  it('accepts a well-formed schema', () => {
    const schema: CrdSchema = {
      type: 'object',
      properties: {
        ports: listOf(
          {
            type: 'object',
            required: ['containerPort'],
            properties: { containerPort: { type: 'integer' }, protocol: { type: 'string', default: 'TCP' } },
          },
          ['containerPort', 'protocol'],
        ),
        port: { anyOf: [{ type: 'integer' }, { type: 'string' }], 'x-kubernetes-int-or-string': true },
        labels: { type: 'object', additionalProperties: { type: 'string' } },
      },
    };
    expect(structuralViolations(schema)).toEqual([]);
  });

  it('reports a list-map key that is neither required nor defaulted', () => {
    const schema: CrdSchema = {
      type: 'object',
      properties: {
        ports: listOf({ type: 'object', properties: { protocol: { type: 'string' } } }, ['protocol']),
      },
    };
    expect(structuralViolations(schema)).toEqual([
      '.ports: list-map-key protocol is neither required nor defaulted',
    ]);
  });

  it('reports nodes without a type, stray anyOf and mixed properties/additionalProperties', () => {
    const schema: CrdSchema = {
      type: 'object',
      properties: {
        untyped: {},
        either: { anyOf: [{ type: 'string' }], type: 'string' },
        both: {
          type: 'object',
          properties: { a: { type: 'string' } },
          additionalProperties: { type: 'string' },
        },
      },
    };
    expect(structuralViolations(schema)).toEqual([
      '.untyped: no type',
      '.either: anyOf only supported for int-or-string',
      '.both: properties and additionalProperties are mutually exclusive',
    ]);
  });

  it('reports a required name that is not a property and a default of the wrong type', () => {
    const schema: CrdSchema = {
      type: 'object',
      required: ['missing'],
      properties: { n: { type: 'integer', default: 'x' } },
    };
    expect(structuralViolations(schema)).toEqual([
      '<root>: required missing is not a property',
      '.n: default "x" is not a integer',
    ]);
  });
});
