import type { CoreSchemaConverter } from './core-schemas';
import { embeddedObjectMetaSchema } from './core-schemas';
import type { CrdSchema } from './crd-schema';
import type { SchemaNode } from './schema-dsl';
import type { KindSchema, PrinterColumn } from './v1alpha1-schemas';

/** What building a CRD needs from a kind's schema, with the phantom types erased. */
export type CrdSource = Omit<KindSchema<unknown>, 'spec' | 'status'> & {
  readonly spec: { readonly node: SchemaNode };
  readonly status: { readonly node: SchemaNode };
};

/** A CustomResourceDefinition in wire (JSON) form, exactly as written to the YAML files. */
export interface CrdDocument {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string };
  spec: {
    group: string;
    names: { kind: string; listKind: string; plural: string; singular: string };
    scope: 'Namespaced' | 'Cluster';
    versions: {
      name: string;
      served: boolean;
      storage: boolean;
      additionalPrinterColumns: PrinterColumn[];
      schema: { openAPIV3Schema: CrdSchema };
      subresources: { status: Record<string, never> };
    }[];
  };
}

export function nodeToSchema(node: SchemaNode, core: CoreSchemaConverter): CrdSchema {
  switch (node.kind) {
    case 'string':
      return node.format ? { type: 'string', format: node.format } : { type: 'string' };
    case 'integer': {
      const out: CrdSchema = { type: 'integer' };
      if (node.format) out.format = node.format;
      if (node.minimum !== undefined) out.minimum = node.minimum;
      return out;
    }
    case 'number':
      return { type: 'number' };
    case 'boolean':
      return { type: 'boolean' };
    case 'array':
      return { type: 'array', items: nodeToSchema(node.items, core) };
    case 'map':
      return { type: 'object', additionalProperties: nodeToSchema(node.values, core) };
    case 'empty-object':
      return { type: 'object' };
    case 'embedded-object-meta':
      return embeddedObjectMetaSchema();
    case 'core':
      return core.convertNamed(node.name);
    case 'object': {
      const properties: Record<string, CrdSchema> = {};
      const required: string[] = [];
      for (const [name, property] of Object.entries(node.properties)) {
        const schema = nodeToSchema(property.node, core);
        if (property.description) schema.description = property.description;
        properties[name] = schema;
        if (property.required) required.push(name);
      }
      const out: CrdSchema = { type: 'object', properties };
      if (node.description) out.description = node.description;
      if (required.length > 0) out.required = required.sort();
      if (node.validations) out['x-kubernetes-validations'] = node.validations.map((v) => ({ ...v }));
      return out;
    }
  }
}

export function buildCrd(kindSchema: CrdSource, core: CoreSchemaConverter): CrdDocument {
  const { kind } = kindSchema;
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${kind.plural}.${kind.group}` },
    spec: {
      group: kind.group,
      names: {
        kind: kind.kind,
        listKind: kindSchema.listKind,
        plural: kind.plural,
        singular: kindSchema.singular,
      },
      scope: kind.namespaced ? 'Namespaced' : 'Cluster',
      versions: [
        {
          name: kind.version,
          served: true,
          storage: true,
          additionalPrinterColumns: kindSchema.printerColumns.map((c) => ({ ...c })),
          schema: {
            openAPIV3Schema: {
              description: kindSchema.description,
              type: 'object',
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: nodeToSchema(kindSchema.spec.node, core),
                status: nodeToSchema(kindSchema.status.node, core),
              },
              // Every controller of these kinds reads the spec from its first line: an object without one
              // could only fail there, after it had been given finalizers it could then never lose.
              required: ['spec'],
            },
          },
          subresources: { status: {} },
        },
      ],
    },
  };
}
