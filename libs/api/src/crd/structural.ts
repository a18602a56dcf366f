import type { CrdSchema } from './crd-schema';

const SCALAR_TYPES = new Set(['string', 'integer', 'number', 'boolean']);

/**
 * The structural-schema rules the apiserver enforces on CRD schemas (and a few of its other CRD schema
 * checks), applied at generation time so a broken schema fails `npm run generate:crds` with the offending
 * path instead of only surfacing when a cluster refuses the CRD.
 */
export function structuralViolations(schema: CrdSchema, path = ''): string[] {
  const problems: string[] = [];
  const at = path || '<root>';
  const intOrString = schema['x-kubernetes-int-or-string'] === true;
  const preserve = schema['x-kubernetes-preserve-unknown-fields'] === true;

  if (!schema.type && !intOrString && !preserve) problems.push(`${at}: no type`);
  if (intOrString) {
    const kinds = (schema.anyOf ?? []).map((s) => s.type).join(',');
    if (schema.type) problems.push(`${at}: int-or-string must not set type`);
    if (schema.anyOf && kinds !== 'integer,string')
      problems.push(`${at}: int-or-string anyOf must be integer,string`);
  } else if (schema.anyOf) {
    problems.push(`${at}: anyOf only supported for int-or-string`);
  }
  if (schema.properties && schema.additionalProperties) {
    problems.push(`${at}: properties and additionalProperties are mutually exclusive`);
  }
  if (schema.type === 'array' && !schema.items) problems.push(`${at}: array without items`);
  if (schema.items && schema.type !== 'array') problems.push(`${at}: items on a non-array`);
  if ((schema.properties || schema.additionalProperties) && schema.type !== 'object') {
    problems.push(`${at}: properties on a non-object`);
  }
  if (schema['x-kubernetes-map-type'] && schema.type !== 'object')
    problems.push(`${at}: map-type on a non-object`);
  for (const name of schema.required ?? []) {
    if (!schema.properties?.[name]) problems.push(`${at}: required ${name} is not a property`);
  }
  if (schema.default !== undefined && schema.type && typeof schema.default !== jsType(schema.type)) {
    problems.push(`${at}: default ${JSON.stringify(schema.default)} is not a ${schema.type}`);
  }

  const listType = schema['x-kubernetes-list-type'];
  const mapKeys = schema['x-kubernetes-list-map-keys'];
  if (listType && schema.type !== 'array') problems.push(`${at}: list-type on a non-array`);
  if (mapKeys && listType !== 'map') problems.push(`${at}: list-map-keys without list-type map`);
  if (listType === 'set' && schema.items && !SCALAR_TYPES.has(schema.items.type ?? '')) {
    if (schema.items['x-kubernetes-map-type'] !== 'atomic') problems.push(`${at}: set of non-scalar items`);
  }
  if (listType === 'map') {
    const item = schema.items;
    if (!item || item.type !== 'object') problems.push(`${at}: list-type map needs object items`);
    if (!mapKeys || mapKeys.length === 0) problems.push(`${at}: list-type map needs list-map-keys`);
    for (const key of mapKeys ?? []) {
      const keySchema = item?.properties?.[key];
      if (!keySchema) {
        problems.push(`${at}: list-map-key ${key} is not an item property`);
      } else if (!SCALAR_TYPES.has(keySchema.type ?? '')) {
        problems.push(`${at}: list-map-key ${key} is not scalar`);
      } else if (!item?.required?.includes(key) && keySchema.default === undefined) {
        problems.push(`${at}: list-map-key ${key} is neither required nor defaulted`);
      }
    }
  }

  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    problems.push(...structuralViolations(property, `${path}.${name}`));
  }
  if (schema.items) problems.push(...structuralViolations(schema.items, `${path}[*]`));
  if (schema.additionalProperties)
    problems.push(...structuralViolations(schema.additionalProperties, `${path}{*}`));
  for (const [i, alternative] of (schema.anyOf ?? []).entries()) {
    if (alternative.properties || alternative.items)
      problems.push(`${at}: anyOf[${i}] must not declare structure`);
  }
  return problems;
}

function jsType(type: NonNullable<CrdSchema['type']>): string {
  return type === 'integer' ? 'number' : type;
}
