import type { CrdSchema } from './crd-schema';

/** The part of a Kubernetes OpenAPI v3 document (`api/openapi-spec/v3/api__v1_openapi.json`) we read. */
export interface OpenApiDocument {
  components: { schemas: Record<string, OpenApiSchema> };
}

export interface OpenApiSchema {
  [keyword: string]: unknown;
}

const OBJECT_META = 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta';

/**
 * The regular expression controller-gen puts on resource.Quantity fields, so quantities are checked at
 * admission as upstream's CRDs check them.
 */
export const QUANTITY_PATTERN =
  '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$';

const stringMap = (): CrdSchema => ({ type: 'object', additionalProperties: { type: 'string' } });

/**
 * The ObjectMeta of an embedded template, as controller-gen emits it with generateEmbeddedObjectMeta (which
 * upstream ARC uses): only the fields a template may meaningfully carry. Everything else is pruned.
 */
export function embeddedObjectMetaSchema(): CrdSchema {
  return {
    type: 'object',
    properties: {
      annotations: stringMap(),
      finalizers: { type: 'array', items: { type: 'string' } },
      labels: stringMap(),
      name: { type: 'string' },
      namespace: { type: 'string' },
    },
  };
}

const intOrString = (): CrdSchema => ({
  anyOf: [{ type: 'integer' }, { type: 'string' }],
  'x-kubernetes-int-or-string': true,
});

/** Named types that have no structural form in the OpenAPI document and get their CRD spelling here. */
const SPECIAL_TYPES: Record<string, () => CrdSchema> = {
  [OBJECT_META]: embeddedObjectMetaSchema,
  'io.k8s.apimachinery.pkg.apis.meta.v1.Time': () => ({ type: 'string', format: 'date-time' }),
  'io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime': () => ({ type: 'string', format: 'date-time' }),
  'io.k8s.apimachinery.pkg.util.intstr.IntOrString': intOrString,
  'io.k8s.apimachinery.pkg.api.resource.Quantity': () => ({ ...intOrString(), pattern: QUANTITY_PATTERN }),
  'io.k8s.apimachinery.pkg.runtime.RawExtension': () => ({
    type: 'object',
    'x-kubernetes-preserve-unknown-fields': true,
  }),
};

/** Keywords a CRD schema accepts and that we carry over unchanged. */
const COPIED = [
  'type',
  'format',
  'enum',
  'minimum',
  'maximum',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'pattern',
];
const COPIED_EXTENSIONS = ['x-kubernetes-list-type', 'x-kubernetes-list-map-keys', 'x-kubernetes-map-type'];
/**
 * Keywords dropped on purpose: descriptions (they would make every CRD megabytes long), strategic-merge
 * hints and union/GVK markers (CRD schemas reject them). Defaults are handled separately.
 */
const DROPPED = new Set([
  'description',
  'default',
  'x-kubernetes-patch-strategy',
  'x-kubernetes-patch-merge-key',
  'x-kubernetes-unions',
  'x-kubernetes-group-version-kind',
]);
const HANDLED = new Set([
  ...COPIED,
  ...COPIED_EXTENSIONS,
  'properties',
  'items',
  'additionalProperties',
  'required',
]);

function refName(ref: unknown, where: string): string {
  if (typeof ref !== 'string' || !ref.startsWith('#/components/schemas/')) {
    throw new Error(`${where}: unsupported $ref ${JSON.stringify(ref)}`);
  }
  return ref.slice('#/components/schemas/'.length);
}

function isScalar(value: unknown): value is string | number | boolean {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

/**
 * Turns Kubernetes' published OpenAPI v3 schemas for core types into structural CRD schemas, the way
 * controller-gen inlines them: `$ref`/`allOf` wrappers resolved, special types spelled for CRDs, extensions
 * a CRD allows kept, everything else dropped. An unknown keyword fails loudly, so a new Kubernetes version
 * cannot silently produce a schema the apiserver would read differently.
 */
export class CoreSchemaConverter {
  private readonly cache = new Map<string, CrdSchema>();

  constructor(private readonly document: OpenApiDocument) {}

  convertNamed(name: string, stack: readonly string[] = []): CrdSchema {
    const special = SPECIAL_TYPES[name];
    if (special) return special();
    const cached = this.cache.get(name);
    if (cached) return structuredClone(cached);
    if (stack.includes(name)) {
      throw new Error(`recursive schema ${[...stack, name].join(' -> ')} cannot be inlined into a CRD`);
    }
    const source = this.document.components.schemas[name];
    if (!source) throw new Error(`OpenAPI document has no schema named ${name}`);
    const converted = this.convert(source, name, [...stack, name]);
    this.cache.set(name, converted);
    return structuredClone(converted);
  }

  private convert(source: OpenApiSchema, where: string, stack: readonly string[]): CrdSchema {
    if (source.$ref !== undefined) return this.convertNamed(refName(source.$ref, where), stack);
    if (source.allOf !== undefined) {
      const parts = source.allOf as OpenApiSchema[];
      if (!Array.isArray(parts) || parts.length !== 1) {
        throw new Error(`${where}: only single-element allOf wrappers are supported`);
      }
      // The wrapper's own keywords (description, default) are the ones dropped anyway.
      const rest = Object.keys(source).filter((k) => k !== 'allOf' && !DROPPED.has(k));
      if (rest.length > 0) throw new Error(`${where}: allOf wrapper with keywords ${rest.join(', ')}`);
      return this.convert(parts[0], where, stack);
    }
    for (const keyword of Object.keys(source)) {
      if (!HANDLED.has(keyword) && !DROPPED.has(keyword)) {
        throw new Error(`${where}: keyword ${keyword} has no CRD translation`);
      }
    }
    const out: Record<string, unknown> = {};
    for (const keyword of [...COPIED, ...COPIED_EXTENSIONS]) {
      if (source[keyword] !== undefined) out[keyword] = structuredClone(source[keyword]);
    }
    const required = (source.required as string[] | undefined) ?? [];
    if (required.length > 0) out.required = [...required].sort();
    if (source.properties !== undefined) {
      const properties: Record<string, CrdSchema> = {};
      for (const [name, property] of Object.entries(source.properties as Record<string, OpenApiSchema>)) {
        const converted = this.convert(property, `${where}.${name}`, stack);
        // Keep only the defaults Kubernetes declares on optional fields (`+default=` markers such as
        // protocol TCP). The zero-value defaults OpenAPI adds to required fields would make `required`
        // meaningless, and object defaults like {} would not validate against required sub-fields.
        if (isScalar(property.default) && !required.includes(name)) converted.default = property.default;
        properties[name] = converted;
      }
      out.properties = properties;
    }
    if (source.items !== undefined)
      out.items = this.convert(source.items as OpenApiSchema, `${where}[]`, stack);
    if (source.additionalProperties !== undefined) {
      if (typeof source.additionalProperties !== 'object' || source.additionalProperties === null) {
        throw new Error(`${where}: boolean additionalProperties is not supported`);
      }
      out.additionalProperties = this.convert(
        source.additionalProperties as OpenApiSchema,
        `${where}{}`,
        stack,
      );
    }
    return out as CrdSchema;
  }
}
